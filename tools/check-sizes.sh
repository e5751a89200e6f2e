#!/bin/sh
# Fails when a C source or header of the tree is over 1,000 lines, or a
# function in one is over 150 lines (make check-unit runs it first). A
# function is a top-level brace block whose opening follows a parenthesised
# declarator (TEST_F bodies count); it is measured from the line of its
# opening brace to the line of its closing one. Comments, strings, character
# literals and preprocessor lines are skipped. What may stay over the limits
# for now is listed, with the reason, in tools/check-sizes.allow; an entry
# no longer needed is named (a note, not a failure).
#
#   tools/check-sizes.sh [FILE...]     (default: every .c/.h outside build/)
set -u
cd "$(dirname "$0")/.." || exit 1
MAX_FILE=1000
MAX_FUNC=150
ALLOW=tools/check-sizes.allow

whole_tree=0
if [ $# -eq 0 ]; then
	whole_tree=1
	set -- $(find . -path ./build -prune -o -path ./.git -prune -o \
		\( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | LC_ALL=C sort)
fi

# "FILE" or "FILE:FUNCTION", one a line; '#' starts a comment
allowed=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$ALLOW")

awk -v whole_tree="$whole_tree" -v max_file="$MAX_FILE" -v max_func="$MAX_FUNC" -v allowed="$allowed" -v sq="'" '
BEGIN {
	n = split(allowed, a, "\n")
	for (i = 1; i <= n; i++) ok[a[i]] = 1
	bad = 0
}
function report(key, msg) {
	if (key in ok) {
		used[key] = 1
		return
	}
	print msg
	bad = 1
}
# The function name in a declarator: the identifier before its first "(",
# with the arguments kept for the test macros (TEST_F(fixture, name)).
function func_name(decl,    d, p, name, args) {
	d = decl
	gsub(/__attribute__[ \t]*\(\([^)]*\)\)/, "", d)
	p = index(d, "(")
	name = substr(d, 1, p - 1)
	sub(/[ \t]+$/, "", name)
	sub(/.*[^A-Za-z0-9_]/, "", name)
	if (name ~ /^[A-Z_][A-Z0-9_]*$/) {
		args = substr(d, p)
		sub(/\).*/, ")", args)
		gsub(/[ \t]+/, "", args)
		name = name args
	}
	return name
}
function end_file() {
	if (FNR_last > max_file)
		report(file, file ": " FNR_last " lines (limit " max_file ")")
}
FNR == 1 {
	if (NR > 1) end_file()
	file = FILENAME
	depth = 0; in_comment = 0; in_pp = 0; decl = ""; func_line = 0
}
{
	FNR_last = FNR
	line = $0
	if (!in_comment && (in_pp || line ~ /^[ \t]*#/)) {
		in_pp = (line ~ /\\$/)
		next
	}
	len = length(line)
	for (i = 1; i <= len; i++) {
		c = substr(line, i, 1)
		if (in_comment) {
			if (c == "*" && substr(line, i + 1, 1) == "/") { in_comment = 0; i++ }
			continue
		}
		if (c == "/" && substr(line, i + 1, 1) == "*") { in_comment = 1; i++; continue }
		if (c == "/" && substr(line, i + 1, 1) == "/") break
		if (c == "\"" || c == sq) {
			q = c
			for (i++; i <= len; i++) {
				d = substr(line, i, 1)
				if (d == "\\") { i++; continue }
				if (d == q) break
			}
			if (depth == 0) decl = decl q q
			continue
		}
		if (c == "{") {
			if (depth == 0 && decl ~ /[A-Za-z0-9_][ \t]*\(/ && decl !~ /=/) {
				func_line = FNR
				func = func_name(decl)
			}
			depth++
			continue
		}
		if (c == "}") {
			if (depth > 0) depth--
			if (depth == 0) {
				if (func_line && FNR - func_line + 1 > max_func)
					report(file ":" func, file ":" func_line ": function " func " is " \
					       (FNR - func_line + 1) " lines (limit " max_func ")")
				func_line = 0
				decl = ""
			}
			continue
		}
		if (depth == 0) {
			if (c == ";") decl = ""
			else decl = decl c
		}
	}
	if (depth == 0) decl = decl " "
}
END {
	if (NR > 0) end_file()
	if (whole_tree)
		for (key in ok)
			if (!(key in used))
				print "check-sizes: note: " key " is within the limits now;" \
				      " remove it from tools/check-sizes.allow"
	if (bad) {
		print "check-sizes: split the files and functions above by job (house style);" \
		      " tools/check-sizes.allow lists the exceptions"
		exit 1
	}
}
' "$@"
