# Shared by the Slurm checks (scripts/slurm-check.sh, slurm-live-check.sh, slurm-sweep-check.sh),
# sourced, not run: the commands they need, the private network namespace they run in, their
# work directory with the daemons they start, and how they fail.

# slurm_need NAME HINT COMMAND…: stop with "NAME: COMMAND not found (HINT)" when one is missing.
slurm_need() {
  local name=$1 hint=$2 cmd
  shift 2
  for cmd in "$@"; do
    command -v "$cmd" >/dev/null || { echo "$name: $cmd not found ($hint)" >&2; exit 1; }
  done
}

# slurm_netns SECONDS SCRIPT ARG…: re-run SCRIPT ARG… under `timeout SECONDS` inside a fresh
# network namespace, or, when already inside it, bring its loopback up. The namespace has only
# lo, so the daemons listen on loopback alone; glibc's AI_ADDRCONFIG ignores loopback
# addresses, so lo also gets a private 10.254.0.1/32 (reachable from nowhere but this
# namespace), or slurmctld cannot even resolve "127.0.0.1".
slurm_netns() {
  local seconds=$1
  shift
  if [ -z "${RAILYARD_SLURM_NETNS:-}" ]; then
    exec timeout "$seconds" env RAILYARD_SLURM_NETNS=1 unshare --net "$@"
  fi
  ip link set lo up
  ip addr add 10.254.0.1/32 dev lo
}

# slurm_workdir NAME: a fresh directory in $work, removed on exit with every daemon whose PID
# is in $slurm_pids (add one with `slurm_pids+=($!)`); `fail` messages start with NAME.
slurm_workdir() {
  slurm_check_name=$1
  work=$(mktemp -d "/tmp/railyard-$1.XXXXXX")
  slurm_pids=()
  trap slurm_cleanup EXIT
}

# Stop the daemons in $slurm_pids and empty it.
slurm_stop() {
  local p
  for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${slurm_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  slurm_pids=()
}

slurm_cleanup() {
  slurm_stop
  rm -rf "$work"
}

# fail MESSAGE…: print it with the end of the daemons' logs, and exit 1.
fail() {
  local f
  echo "$slurm_check_name: FAIL: $*" >&2
  for f in slurmctld.log slurmd.log; do
    [ -f "$work/$f" ] && grep -v "pmix\|mpi\|MPI" "$work/$f" | tail -12 | sed "s/^/  $f: /" >&2
  done
  exit 1
}
