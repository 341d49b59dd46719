# kill-mid-write.sh OUT COMMAND...: runs COMMAND, waits until its temporary file for OUT.cpp
# appears (the write has begun), kills it with SIGKILL and says whether it caught it writing.
out=$1
shift
"$@" &
pid=$!
dir=$(dirname "$out")
base=$(basename "$out")
for _ in $(seq 1 3000); do
  if ls -A "$dir" | grep -q "^\.$base\.cpp\.tmp"; then
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    echo "killed while writing"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
wait "$pid"
echo "finished before the write could be caught"
