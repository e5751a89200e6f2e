#!/bin/sh
# Fails when one of colocd's objects was compiled from a header of a
# library colocd does not link (the Makefile runs it on each daemon/ object's
# dependency file, written with -MD so that system headers are listed too).
# colocd links libcolocd, libcoloc_profile, libcoloc_policy and
# libcoloc_common: its sources may read include/, daemon/, common/, policy/,
# the profile library's executor/include/profile/ and the BPF skeletons in
# build/gen/, and no header of oneDNN, protobuf-c or OpenMP. The include
# paths already refuse the rest by name; this catches a relative path
# ("../executor/model.h") and the system's headers, which no -I hides.
#
#   tools/check-daemon-includes.sh DEPFILE...
set -u
status=0
for dep in "$@"; do
	# the first rule, its continuation lines joined (-MP adds an empty rule per header)
	headers=$(sed -e ':a' -e '/\\$/N' -e 's/\\\n//' -e 'ta' "$dep" | head -n 1 | cut -d: -f2-)
	for h in $(realpath -m --relative-base=. $headers); do
		case "$h" in
		/*/oneapi/* | /*/protobuf-c/* | /*/omp.h)
			why="colocd links neither oneDNN, protobuf-c nor OpenMP" ;;
		/*) continue ;;
		daemon/* | include/* | common/* | policy/* | executor/include/profile/*) continue ;;
		build/gen/*.skel.h | build/gen/vmlinux.h) continue ;;
		*) why="colocd links only the profile library of executor/ (DEVELOPERS.md)" ;;
		esac
		echo "check-daemon-includes: $dep: includes $h: $why" >&2
		status=1
	done
done
exit $status
