#!/usr/bin/env bash
# A peer runner that speaks the protocol of bench/peers/README.md without
# computing attention, for testing how attn bench handles each outcome.
set -eu
impl= dir= probe=0
while (($#)); do
  case $1 in
    --impl) impl=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --probe) probe=1; shift ;;
    *) shift 2 ;;
  esac
done
if ((probe)); then
  case $impl in
    fake-absent) echo '{"impl":"fake-absent","version":"fake 0","available":false,"reason":"no fake adapter"}' ;;
    *) echo "{\"impl\":\"$impl\",\"version\":\"fake 1\",\"available\":true}" ;;
  esac
  exit 0
fi
case $impl in
  fake-copy) # O = Q: the right shape, the wrong answer
    cp "$dir/q.npy" "$dir/o-$impl.npy"
    # Live long enough for attn bench to read the peak RSS from /proc,
    # which it polls every 10 ms: a busy machine may start the poller
    # after a process this short has ended.
    sleep 0.3
    echo "warming up"
    echo "{\"impl\":\"$impl\",\"version\":\"fake 1\",\"warmup_s\":0.5,\"times_s\":[0.3,0.1,0.2],\"notes\":\"copies q\"}" ;;
  fake-shape) # O = K, which has fewer heads
    cp "$dir/k.npy" "$dir/o-$impl.npy"
    echo "{\"impl\":\"$impl\",\"version\":\"fake 1\",\"warmup_s\":0.5,\"times_s\":[0.1]}" ;;
  fake-noout)
    echo "{\"impl\":\"$impl\",\"version\":\"fake 1\",\"warmup_s\":0.5,\"times_s\":[0.1]}" ;;
  fake-refuse)
    echo "{\"impl\":\"$impl\",\"version\":\"fake 1\",\"error\":\"this shape is not supported\"}" ;;
  fake-kill)
    kill -KILL $$ ;;
  fake-fail)
    echo "Traceback: something broke" >&2
    exit 3 ;;
  fake-garbage)
    echo "not json" ;;
esac
