# bench-qos's confidence intervals (issue 27): a percentile bootstrap over a
# cell's searches. Input, one search per line: GROUP VALUE (a QoS-QPS).
#   mode=cell   one group: prints "median lo hi", the median of the values
#               and the 95 % interval of the median over resamples
#   mode=ratio  group "num" (coloc's searches) and one group per baseline:
#               prints "ratio lo hi verdict best", the median of num over the
#               highest baseline median, its 95 % interval (each resample
#               draws the searches again, the best baseline chosen anew),
#               the verdict (win: lo > 1, loss: hi < 1, tie otherwise) and
#               the baseline best on the full data. When every group has
#               as many searches, line k of each is search k (the same
#               arrivals, its policies' points run interleaved) and a
#               resample draws searches, not values: one draw for all
#               groups (paired); otherwise each group draws its own
# A group of one search has no interval: "n/a" for lo and hi and the
# verdict. -v b=N resamples (default 4000), -v seed=N (default 1): the same
# input always gives the same interval. docs/design/bench-qos-ci.md.
function median(a, n,    i, j, t, s) {
	for (i = 1; i <= n; i++)
		s[i] = a[i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && s[j - 1] > s[j]; j--) {
			t = s[j]; s[j] = s[j - 1]; s[j - 1] = t
		}
	return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
}
# the median of a resample of group g's searches: the drawn searches pick[] when
# paired, draws of its own otherwise
function resampled(g,    i, n, r) {
	n = cnt[g]
	for (i = 1; i <= n; i++)
		r[i] = val[g, paired ? pick[i] : 1 + int(rand() * n)]
	return median(r, n)
}
function group_median(g,    i, a) {
	for (i = 1; i <= cnt[g]; i++)
		a[i] = val[g, i]
	return median(a, cnt[g])
}
# the q-quantile (0..1) of v[1..n], sorted in place (a Shell sort: mawk has no asort)
function quantile(v, n, q,    gap, i, j, t) {
	for (gap = int(n / 2); gap > 0; gap = int(gap / 2))
		for (i = gap + 1; i <= n; i++) {
			t = v[i]
			for (j = i; j > gap && v[j - gap] > t; j -= gap)
				v[j] = v[j - gap]
			v[j] = t
		}
	return v[int(q * (n - 1) + 0.5) + 1]
}
# the best (highest) baseline median of the full data or, resampling, of a resample
function best_base(resample,    g, m, best) {
	best = -1
	for (g in cnt) {
		if (g == "num")
			continue
		m = resample ? resampled(g) : group_median(g)
		if (m > best) {
			best = m
			best_name = g
		}
	}
	return best
}
BEGIN { if (!b) b = 4000; if (!seed) seed = 1; srand(seed) }
NF == 2 && $2 ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ {
	val[$1, ++cnt[$1]] = $2 + 0
	next
}
NF { printf "bench-qos-ci: line %d is not GROUP VALUE: %s\n", NR, $0 > "/dev/stderr"; bad = 1 }
END {
	if (bad)
		exit 1
	if (mode == "cell") {
		for (g in cnt)
			grp = g
		if (!cnt[grp])
			exit 1
		m = group_median(grp)
		if (cnt[grp] < 2) {
			printf "%.3f n/a n/a\n", m
			exit 0
		}
		for (i = 1; i <= b; i++)
			v[i] = resampled(grp)
		printf "%.3f %.3f %.3f\n", m, quantile(v, b, 0.025), quantile(v, b, 0.975)
		exit 0
	}
	if (mode != "ratio" || !cnt["num"]) {
		print "bench-qos-ci: mode=cell, or mode=ratio with a group num" > "/dev/stderr"
		exit 1
	}
	den = best_base(0)
	name = best_name
	if (den <= 0) {
		print "n/a n/a n/a n/a -"
		exit 0
	}
	ratio = group_median("num") / den
	single = cnt["num"] < 2
	for (g in cnt)
		single = single || cnt[g] < 2
	if (single) {
		printf "%.3f n/a n/a n/a %s\n", ratio, name
		exit 0
	}
	paired = 1
	for (g in cnt)
		paired = paired && cnt[g] == cnt["num"]
	# a resample whose best baseline is 0 has no ratio: it counts as infinite
	for (i = 1; i <= b; i++) {
		for (k = 1; paired && k <= cnt["num"]; k++)
			pick[k] = 1 + int(rand() * cnt["num"])
		d = best_base(1)
		v[i] = d > 0 ? resampled("num") / d : 1e308
	}
	lo = quantile(v, b, 0.025)
	hi = quantile(v, b, 0.975)
	hi_text = hi >= 1e307 ? "inf" : sprintf("%.3f", hi)
	verdict = lo > 1 ? "win" : hi < 1 ? "loss" : "tie"
	printf "%.3f %.3f %s %s %s\n", ratio, lo, hi_text, verdict, name
}
