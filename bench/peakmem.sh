#!/usr/bin/env bash
# peakmem.sh CMD ARGS...: runs CMD in a session of its own and prints two
# peaks of the resident memory (RSS) of the processes in it: the summed
# RSS of all of them at once, sampled every 0.2 s (a go command with its
# compiler, test binaries run side by side, a benchmark's isolated point
# processes), and the largest single process's own peak (its VmHWM, read
# while it runs, so a process alive at any sample after its peak counts).
# The README's memory figures come from it, e.g.
#
#	bench/peakmem.sh go run ./cmd/attn bench
#
# CMD's output goes to stdout and stderr as usual; the peaks go to stderr
# last, and the exit status is CMD's.
set -u
setsid "$@" &
pid=$!
sleep 0.1
sid=$(ps -o sid= -p "$pid" | tr -d ' ')
peak=0 single=0 name=
while kill -0 "$pid" 2>/dev/null; do
	kib=$(ps -e -o sid=,rss= | awk -v s="$sid" '$1 == s { t += $2 } END { print t + 0 }')
	((kib > peak)) && peak=$kib
	for p in $(ps -e -o sid=,pid= | awk -v s="$sid" '$1 == s { print $2 }'); do
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		if [ -n "$hwm" ] && ((hwm > single)); then
			single=$hwm
			name=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-80)
		fi
	done
	sleep 0.2
done
wait "$pid"
rc=$?
awk -v k="$peak" 'BEGIN { printf "peakmem: %.2f GiB (%d KiB) summed RSS at its peak\n", k / 1048576, k }' >&2
awk -v k="$single" -v n="$name" 'BEGIN { printf "peakmem: %.2f GiB (%d KiB) the largest single process (VmHWM): %s\n", k / 1048576, k, n }' >&2
exit "$rc"
