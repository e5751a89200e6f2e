# bench-qos's confirmation walk (issue 27): after a search's bisection, the
# loads that decide its QoS-QPS are run again, longer, and judged on every
# query run at them. Input, the search's points so far, one line per tenant
# and point, in the order run: PHASE TOTAL TENANT SENT WITHIN (points.tsv's
# columns; WITHIN the fraction within QoS; PHASE confirm for the walk's).
# A load's verdict: pass if every tenant has >= 95 % of the queries sent at
# it, all its points pooled, within QoS (a tenant sent none fails).
# The walk starts at the bisection's highest pass (LO), steps up by the
# bisection's last ratio (HI / LO) from a pass and down from a failure, and
# ends when it steps onto a load it confirmed or after -v walk=N loads
# (default 3). Loads within 0.1 % are one: a step onto a load the search
# ran runs that load again. Prints "run LOAD" (the next load to confirm)
# or "done QPS": the highest confirmed load that passes; if none, the
# highest load below the confirmed ones that passes; 0 when none. A search
# with no failure or no pass is done at LO (or 0) without a walk.
# docs/design/bench-qos-ci.md, "The confirmation walk".

# The load within 0.1 % of t that the input has, or "".
function find(t,    l) {
	for (l in seen)
		if (t > l * 0.999 && t < l * 1.001)
			return l
	return ""
}
# The key of load t: the input's load within 0.1 %, else t itself.
function key(t,    l) {
	l = find(t)
	if (l == "")
		seen[l = t] = 1
	return l
}
# the verdict of load l on the queries counted in n (sent) and w (within)
function judge(l, n, w,    g) {
	for (g in tenants)
		if ((l, g) in n && (n[l, g] == 0 || 20 * (n[l, g] - w[l, g]) > n[l, g]))
			return 0
	return 1
}
function passes(l) {
	return judge(l, sent, within)
}
function confirmed(t,    i, l) {
	l = find(t)
	for (i = 1; i <= nconf; i++)
		if (l != "" && l == conf[i])
			return 1
	return 0
}
function done(    i, best, low, l) {
	best = -1
	for (i = 1; i <= nconf; i++)
		if (passes(conf[i]) && conf[i] + 0 > best)
			best = conf[i] + 0
	if (best < 0) {
		low = conf[1] + 0
		for (i = 2; i <= nconf; i++)
			if (conf[i] + 0 < low)
				low = conf[i] + 0
		best = 0
		for (l in seen)
			if (l + 0 < low && l + 0 > best && passes(l))
				best = l + 0
	}
	printf "done %.3f\n", best
	exit 0
}
BEGIN { if (!walk) walk = 3; CONVFMT = "%.3f" }
NF == 5 && $2 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ && $5 ~ /^[0-9.]+$/ {
	l = key($2 + 0)
	w = int($5 * $4 + 0.5)
	tenants[$3] = 1
	sent[l, $3] += $4
	within[l, $3] += w
	if ($1 == "confirm") {
		if (!confirmed(l))
			conf[++nconf] = l
		last = l
	} else {
		searched[l] = 1
		ssent[l, $3] += $4
		swithin[l, $3] += w
	}
	next
}
NF { printf "bench-qos-confirm: line %d is not PHASE TOTAL TENANT SENT WITHIN: %s\n", NR, $0 > "/dev/stderr"; bad = 1 }
END {
	if (bad)
		exit 1
	lo = 0
	hi = -1
	for (l in searched)
		if (judge(l, ssent, swithin)) {
			if (l + 0 > lo)
				lo = l + 0
		} else if (hi < 0 || l + 0 < hi) {
			hi = l + 0
		}
	if (lo == 0 || hi < 0) {
		printf "done %.3f\n", lo
		exit 0
	}
	if (!nconf) {
		printf "run %.3f\n", lo
		exit 0
	}
	next_t = passes(last) ? last * hi / lo : last * lo / hi
	if (nconf >= walk || confirmed(next_t))
		done()
	l = find(next_t)
	printf "run %.3f\n", l == "" ? next_t : l
}
