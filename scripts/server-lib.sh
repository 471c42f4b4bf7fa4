# Sourced by the test servers' start and stop scripts, which set name (for
# messages), pidfile, log and mark (a string the server's command line
# holds, which guards against a reused pid).

say() { echo "$name: $*" >&2; }

die() {
	say "$*"
	if [[ -f ${log:-} ]]; then
		say "last lines of $log:"
		tail -n 40 "$log" >&2
	fi
	exit 1
}

# is_server PID: a live server of ours.
is_server() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$mark"
}

# reuse ENVFILE: ends the script when a server started from this cache
# dir still runs, and wrote ENVFILE.
reuse() {
	if [[ -f $pidfile && -f $1 ]] && is_server "$(cat "$pidfile")"; then
		say "already running (pid $(cat "$pidfile")); reusing $1"
		exit 0
	fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# stop_server: SIGTERM to the server in pidfile, SIGKILL after 10 s.
stop_server() {
	local pid
	pid=$(cat "$pidfile" 2>/dev/null || true)
	if is_server "$pid"; then
		kill -TERM "$pid"
		for _ in $(seq 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "pid $pid ignored SIGTERM for 10s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		say "stopped (pid $pid)"
	else
		say "not running"
	fi
}
