#!/usr/bin/env bash
# The CPU and memory a running process costs over a span: the share of one core it used (utime +
# stime from /proc/PID/stat, over the span's wall time), each thread's share (from
# /proc/PID/task/TID/stat), and its resident memory at the end (VmRSS).
#
#   bash tests/workloads/process_cost.sh PID SECONDS
#
# Prints one line for the process and one per thread, e.g.
#   pid 4242 gpulse: 0.512% of a core over 60.0 s, rss 28.4 MB
#     thread gpulse-sampler: 0.210%
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 PID SECONDS" >&2; exit 2; }
pid=$1 span=$2
hz=$(getconf CLK_TCK)

# utime + stime (clock ticks) of a /proc stat file; the command name may hold spaces, so the
# fields are counted after its closing parenthesis.
ticks() { sed -e 's/^.*) //' "$1" 2>/dev/null | awk '{print $12 + $13}'; }

declare -A before names
for t in /proc/"$pid"/task/*; do
    tid=${t##*/}
    before[$tid]=$(ticks "$t/stat" || echo 0)
    names[$tid]=$(cat "$t/comm" 2>/dev/null || echo "?")
done
start_total=$(ticks /proc/"$pid"/stat)
start_ns=$(date +%s%N)
sleep "$span"
end_total=$(ticks /proc/"$pid"/stat) || { echo "pid $pid ended during the span" >&2; exit 1; }
end_ns=$(date +%s%N)
wall=$(awk -v a="$start_ns" -v b="$end_ns" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
rss_kb=$(awk '/^VmRSS:/ { print $2 }' /proc/"$pid"/status)
comm=$(cat /proc/"$pid"/comm)
awk -v p="$pid" -v c="$comm" -v a="$start_total" -v b="$end_total" -v w="$wall" -v hz="$hz" -v rss="$rss_kb" \
    'BEGIN { printf "pid %s %s: %.3f%% of a core over %.1f s, rss %.1f MB\n", p, c, 100 * (b - a) / hz / w, w, rss / 1024 }'
for tid in "${!before[@]}"; do
    after=$(ticks /proc/"$pid"/task/"$tid"/stat || echo "${before[$tid]}")
    awk -v n="${names[$tid]}" -v a="${before[$tid]}" -v b="$after" -v w="$wall" -v hz="$hz" \
        'BEGIN { if (b > a) printf "  thread %s: %.3f%%\n", n, 100 * (b - a) / hz / w }'
done
