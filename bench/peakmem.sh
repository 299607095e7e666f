#!/usr/bin/env bash
# peakmem.sh CMD ARGS...: runs CMD in a session of its own and prints the
# peak of the summed resident memory (RSS) of every process in it, sampled
# every 0.2 s: a go command with its compiler, test binaries run side by
# side, a benchmark's isolated point processes. The README's memory figures
# come from it, e.g.
#
#	bench/peakmem.sh go run ./cmd/attn bench
#
# CMD's output goes to stdout and stderr as usual; the peak goes to stderr
# last, and the exit status is CMD's.
set -u
setsid "$@" &
pid=$!
sleep 0.1
sid=$(ps -o sid= -p "$pid" | tr -d ' ')
peak=0
while kill -0 "$pid" 2>/dev/null; do
	kib=$(ps -e -o sid=,rss= | awk -v s="$sid" '$1 == s { t += $2 } END { print t + 0 }')
	((kib > peak)) && peak=$kib
	sleep 0.2
done
wait "$pid"
rc=$?
awk -v k="$peak" 'BEGIN { printf "peakmem: %.2f GiB (%d KiB) summed RSS at its peak\n", k / 1048576, k }' >&2
exit "$rc"
