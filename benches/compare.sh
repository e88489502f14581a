#!/usr/bin/env bash
# benches/compare.sh — tern, Claude Code and Codex side by side on the same
# stand-in work (examples/standin.rs: the Messages API for the first two,
# the Responses API for Codex), each from an empty environment with its own
# HOME:
#   version      `tern -v`, `claude --version`, `codex --version`
#   one turn     one prompt, a one-line text answer
#   20 turns     19 shell calls (`echo turn K`: Bash, or Codex's
#                exec_command), then the answer
# Prints the median wall time, CPU time (user + system) and peak RSS of
# each, and the others' ratios to tern. RUNS=N repeats each (default 10;
# the 20-turn session runs N/3 times, at least 3).
#   bash benches/compare.sh            # after: bash cross/build.sh x86_64
set -euo pipefail
cd "$(dirname "$0")/.."
bash benches/setup.sh
tern=$(realpath "${TERN_BIN:-target/x86_64-unknown-linux-musl/release/tern}")
[ -x "$tern" ] || { echo "benches/compare.sh: no $tern (run: bash cross/build.sh x86_64)" >&2; exit 1; }
claude=$(realpath target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude)
codex=$(realpath target/bench-tools/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex)
cargo build --quiet --release --example standin
runs=${RUNS:-10}
session_runs=$(( runs / 3 > 3 ? runs / 3 : 3 ))

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Two stand-ins on loopback: plain answers, and the 20-turn tool session.
serve() {
  STANDIN_TOOL_TURNS=$1 target/release/examples/standin >"$work/$2.url" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/$2.url" ] && break; sleep 0.05; done
  [ -s "$work/$2.url" ] || { echo "benches/compare.sh: the stand-in did not start" >&2; exit 1; }
}
serve "" plain
serve 20 session
plain=$(cat "$work/plain.url")
session=$(cat "$work/session.url")

mkdir -p "$work/project" && printf 'PORT = 8080\n' >"$work/project/config.py"
# Codex reads its provider from its own home.
codex_home() {
  mkdir -p "$work/codex-$1/.codex"
  cat >"$work/codex-$1/.codex/config.toml" <<EOF
model = "gpt-5"
model_provider = "standin"
[model_providers.standin]
name = "standin"
base_url = "$2/v1"
wire_api = "responses"
env_key = "STANDIN_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF
}
codex_home plain "$plain"
codex_home session "$session"

# The runs: wall and CPU time of each agent run directly (CPU from the
# children's rusage, in microseconds), and its peak RSS from GNU time in
# separate runs (a child's own ru_maxrss carries the size of whatever
# forked it; time is small and reports the child's).
export TERN="$tern" COMPARE_WORK="$work" CLAUDE="$claude" CODEX="$codex" PLAIN="$plain" SESSION="$session" RUNS="$runs" SESSION_RUNS="$session_runs"
python3 - <<'EOF'
import os, resource, statistics, subprocess, time
work = os.environ["COMPARE_WORK"]
tern, claude, codex = os.environ["TERN"], os.environ["CLAUDE"], os.environ["CODEX"]
urls = {"turn": os.environ["PLAIN"], "session": os.environ["SESSION"]}
prompt = "where is the port set?"

def command(agent, what):
    home = f"{work}/home-{agent}-{what}"
    os.makedirs(home, exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": home}
    if what == "version":
        return {"tern": [tern, "-v"], "claude": [claude, "--version"], "codex": [codex, "--version"]}[agent], env
    if agent == "tern":
        env.update(ANTHROPIC_BASE_URL=urls[what], ANTHROPIC_API_KEY="sk-bench")
        return [tern, "-p", prompt, "--allowedTools", "Bash(echo turn:*)", "--max-turns", "40"], env
    if agent == "claude":
        env.update(ANTHROPIC_BASE_URL=urls[what], ANTHROPIC_API_KEY="sk-bench",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
        return [claude, "-p", prompt, "--allowedTools", "Bash(echo turn:*)", "--max-turns", "40"], env
    env.update(CODEX_HOME=f"{work}/codex-{'session' if what == 'session' else 'plain'}/.codex",
               STANDIN_KEY="sk-bench")
    return [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt], env

def run(agent, what, rss=False):
    cmd, env = command(agent, what)
    out = f"{work}/rss"
    if rss:
        cmd = ["/usr/bin/time", "-f", "%M", "-o", out] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=f"{work}/project", stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"benches/compare.sh: {agent} ({what}) failed:\n{done.stderr[-2000:]}")
    if what == "session" and "All turns done" not in done.stdout:
        raise SystemExit(f"benches/compare.sh: {agent} did not finish the 20-turn session:\n"
                         f"{done.stdout[-1000:]}{done.stderr[-1000:]}")
    if rss:
        return int(open(out).read().split()[0])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu

runs, session_runs = int(os.environ["RUNS"]), int(os.environ["SESSION_RUNS"])
names = {"version": "version", "turn": "one turn", "session": "20 turns"}
print(f"{'':20}{'wall':>11}{'cpu':>11}{'peak RSS':>12}   to tern: wall / cpu / RSS")
for what in ("version", "turn", "session"):
    n = session_runs if what == "session" else runs
    base = None
    for agent in ("tern", "claude", "codex"):
        run(agent, what)  # warms the page cache and the agent's home
        samples = [run(agent, what) for _ in range(n)]
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        rss = max(run(agent, what, rss=True) for _ in range(3)) / 1024
        ratio = ""
        if base is None:
            base = (wall, cpu, rss)
        else:
            ratio = f"{wall / base[0]:.0f}x / {cpu / base[1]:.0f}x / {rss / base[2]:.0f}x"
        label = f"{names[what]}, {agent}"
        print(f"{label:20}{wall * 1e3:>9.2f}ms{cpu * 1e3:>9.2f}ms{rss:>9.1f}MiB   {ratio}", flush=True)
print(f"(medians of {runs} runs, {session_runs} for 20 turns; peak RSS the largest of 3 runs through GNU time)")
EOF
