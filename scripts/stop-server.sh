# Sourced by the emulators' stop scripts: stop_server NAME PIDFILE MARK
# stops the process in PIDFILE if it is alive and its command line holds
# MARK (guarding against a reused pid): SIGTERM, then SIGKILL after 10 s.
stop_server() {
	local name=$1 pidfile=$2 mark=$3 pid
	pid=$(cat "$pidfile" 2>/dev/null || true)
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$mark"; then
		kill -TERM "$pid"
		for _ in $(seq 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "$name: pid $pid ignored SIGTERM for 10s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
		echo "$name: stopped (pid $pid)" >&2
	else
		echo "$name: not running" >&2
	fi
}
