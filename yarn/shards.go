package yarn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/storage"
)

// DistributedShell is the ApplicationMaster the shards run under: Hadoop's
// own, shipped with every Hadoop in share/hadoop/yarn.
const DistributedShell = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"

// defaultClasspath is YARN's default application classpath
// (DEFAULT_YARN_CROSS_PLATFORM_APPLICATION_CLASSPATH), where a Hadoop
// installation has DistributedShell and what it needs.
var defaultClasspath = []string{
	"{{HADOOP_CONF_DIR}}",
	"{{HADOOP_COMMON_HOME}}/share/hadoop/common/*", "{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*",
	"{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/*", "{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/lib/*",
	"{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*", "{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*",
}

// Job is a sharded copy to run on YARN: every shard of Plan as one
// container of one DistributedShell application.
type Job struct {
	Client *Client
	// Storage resolves the plan's staging area, where the binary, the
	// container script and the shards' logs go.
	Storage *storage.Registry
	Plan    *migrate.ShardPlan
	// PlanFile is the plan file's URI, as the containers read it.
	PlanFile string
	// Binary is the stateutil executable the containers run (built for
	// the cluster's nodes).
	Binary string
	Queue  string
	// ContainerMemoryMB and AMMemoryMB size the containers (default 512
	// and 256); Retries is how often a failed shard is started again in
	// its container before the application fails (0: never).
	ContainerMemoryMB, AMMemoryMB, Retries int
	// AMJar, if set, is a local DistributedShell jar shipped to the
	// ApplicationMaster, for clusters whose classpath lacks it;
	// AMClasspath adds entries to the ApplicationMaster's classpath.
	AMJar, AMClasspath string
	// ShardEnv is more environment for the shards.
	ShardEnv map[string]string
	// Tokens are handed to the ApplicationMaster and by it to every
	// shard's container (DistributedShell passes its credentials on): the
	// HDFS delegation tokens a kerberized cluster's shards log in with.
	Tokens []hdfs.Token
	// Poll is how often the application's state is asked (default 1s).
	Poll time.Duration
	// Log receives progress lines (may be nil).
	Log io.Writer
}

// ErrShardFailed reports an application whose shards did not all succeed.
var ErrShardFailed = errors.New("shard failed")

// Run submits the job's application and waits for it to end. A failed
// application's error names each shard that did not record its part and
// shows the end of its log. Canceling ctx kills the application.
func Run(ctx context.Context, job Job) (*App, error) {
	logf := func(format string, args ...any) {
		if job.Log != nil {
			fmt.Fprintf(job.Log, "stateutil: "+format+"\n", args...)
		}
	}
	c := job.Client
	st, staging, err := job.Storage.Resolve(ctx, job.Plan.Staging)
	if err != nil {
		return nil, err
	}
	n := len(job.Plan.Shards)
	id, err := c.NewApplication(ctx)
	if err != nil {
		return nil, err
	}
	bin := path.Join(staging, "bin", id)
	if err := st.MkdirAll(ctx, bin); err != nil {
		return nil, err
	}
	// DistributedShell localizes --localized_files from <homedir>/<appname>/<app id>/.
	if err := upload(ctx, st, job.Binary, path.Join(bin, "stateutil")); err != nil {
		return nil, err
	}
	script := path.Join(bin, "shard")
	if err := storage.WriteFile(ctx, st, script, []byte(shardScript)); err != nil {
		return nil, err
	}
	si, err := st.Stat(ctx, script)
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		// The ApplicationMaster renames the script to <name>.sh and hands
		// it to every container with this size and time.
		"DISTRIBUTEDSHELLSCRIPTLOCATION":  st.URI(script),
		"DISTRIBUTEDSHELLSCRIPTTIMESTAMP": strconv.FormatInt(si.ModTime.UnixMilli(), 10),
		"DISTRIBUTEDSHELLSCRIPTLEN":       strconv.FormatInt(si.Size, 10),
	}
	cp := append([]string{"{{CLASSPATH}}", "./*"}, defaultClasspath...)
	if job.AMClasspath != "" {
		cp = append(cp, job.AMClasspath)
	}
	env["CLASSPATH"] = strings.Join(cp, "<CPS>")
	resources := map[string]LocalResource{}
	if job.AMJar != "" {
		p := path.Join(bin, "AppMaster.jar")
		if err := upload(ctx, st, job.AMJar, p); err != nil {
			return nil, err
		}
		info, err := st.Stat(ctx, p)
		if err != nil {
			return nil, err
		}
		resources["AppMaster.jar"] = LocalResource{URL: st.URI(p), Size: info.Size, Timestamp: info.ModTime.UnixMilli()}
	}
	shardEnv := map[string]string{"STATEUTIL_PLAN": job.PlanFile, "STATEUTIL_SHARDS": strconv.Itoa(n), "STATEUTIL_RETRIES": strconv.Itoa(max(job.Retries, 0))}
	if u := c.User; u != "" {
		shardEnv["HADOOP_USER_NAME"] = u
	}
	for k, v := range job.ShardEnv {
		shardEnv[k] = v
	}
	amMem := positive(job.AMMemoryMB, 256)
	args := []string{"{{JAVA_HOME}}/bin/java", fmt.Sprintf("-Xmx%dm", amMem*3/4), DistributedShell,
		"--container_memory", strconv.Itoa(positive(job.ContainerMemoryMB, 512)), "--container_vcores", "1",
		"--num_containers", strconv.Itoa(n), "--priority", "0",
		"--localized_files", "stateutil", "--appname", "bin", "--homedir", st.URI(staging)}
	for _, k := range sortedKeys(shardEnv) {
		args = append(args, "--shell_env", shellQuote(k+"="+shardEnv[k]))
	}
	args = append(args, "1><LOG_DIR>/AppMaster.stdout", "2><LOG_DIR>/AppMaster.stderr")
	// A second attempt only follows an ApplicationMaster that died without
	// unregistering (one that reports failed shards ends the application);
	// it runs the shards again, which a shard allows (see migrate.RunShard).
	err = c.Submit(ctx, Submission{
		ID: id, Name: "stateutil shards " + job.Plan.ID, Queue: cmpOr(job.Queue, "default"), Type: "STATEUTIL",
		Command: strings.Join(args, " "), Env: env, Resources: resources,
		MemoryMB: amMem, VCores: 1, MaxAttempts: 2, Tokens: job.Tokens,
	})
	if err != nil {
		return nil, err
	}
	logf("submitted %s: %d shards of plan %s; shard logs in %s until the commit (and in YARN's: yarn logs -applicationId %s)",
		id, n, job.Plan.ID, st.URI(path.Join(staging, "logs")), id)
	app, err := c.Wait(ctx, id, job.Poll)
	if err != nil {
		if ctx.Err() != nil {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err = errors.Join(err, c.Kill(kctx, id))
		}
		return nil, err
	}
	// The shards' records, not the application's final status, say what
	// was written: the commit checks them file by file anyway.
	if app.State == "FINISHED" && len(missingRecords(ctx, st, staging, job.Plan)) == 0 {
		logf("%s finished: all %d shards recorded their part", id, n)
		return app, nil
	}
	return app, failure(ctx, st, staging, job.Plan, app)
}

func positive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// shellQuote quotes s for bash: the ApplicationMaster's command line is
// run by the container's launch script.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shardScript is what each container runs: the shard of its YARN_SHELL_ID,
// started again up to STATEUTIL_RETRIES times when it fails. The retries
// are the script's, not the NodeManager's: a NodeManager never restarts a
// container whose process was killed (exit 137, FORCE_KILLED, is not
// retried whatever the retry policy), and a shard killed by the kernel's
// OOM killer or by hand is the case to survive.
const shardScript = `#!/bin/bash
# stateutil shard, run by DistributedShell in container $YARN_SHELL_ID of $STATEUTIL_SHARDS.
set -u
chmod +x ./stateutil 2>/dev/null
attempts=$((${STATEUTIL_RETRIES:-0} + 1))
rc=1
for ((a = 1; a <= attempts; a++)); do
	./stateutil shard "$STATEUTIL_PLAN" --shard "$YARN_SHELL_ID/$STATEUTIL_SHARDS" && exit 0
	rc=$?
	echo "stateutil: shard $YARN_SHELL_ID/$STATEUTIL_SHARDS: run $a of $attempts exited with $rc" >&2
done
exit $rc
`

// upload copies a local file to p on st.
func upload(ctx context.Context, st storage.Storage, local, p string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := st.Create(ctx, p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, bufio.NewReaderSize(f, 1<<20)); err != nil {
		w.Abort()
		return fmt.Errorf("uploading %s to %s: %w", local, st.URI(p), err)
	}
	return w.Commit()
}

// failure is the error of a failed application: every shard without a
// record, with the end of its last log.
func failure(ctx context.Context, st storage.Storage, staging string, sp *migrate.ShardPlan, app *App) error {
	failed := missingRecords(ctx, st, staging, sp)
	var b strings.Builder
	fmt.Fprintf(&b, "%v: YARN application %s %s", ErrShardFailed, app.ID, strings.ToLower(cmpOr(app.FinalStatus, app.State)))
	if d := oneLine(app.Diagnostics); d != "" {
		fmt.Fprintf(&b, " (%s)", d)
	}
	if len(failed) == 0 {
		fmt.Fprintf(&b, "; every shard recorded its part, but the application did not succeed; its ApplicationMaster's log: %s", app.AMContainerLogs)
	}
	logs, _ := st.List(ctx, path.Join(staging, "logs"))
	for _, i := range failed {
		fmt.Fprintf(&b, "\nshard %d of %d failed", i, len(sp.Shards))
		prefix := fmt.Sprintf("shard-%04d.", i)
		var last storage.Info
		for _, l := range logs {
			if strings.HasPrefix(l.Name, prefix) && (last.Name == "" || l.ModTime.After(last.ModTime) || (l.ModTime.Equal(last.ModTime) && l.Name > last.Name)) {
				last = l
			}
		}
		if last.Name == "" {
			fmt.Fprintf(&b, " without writing a log (killed, or never started); its container's stdout and stderr are in the NodeManager's log directory (yarn logs -applicationId %s)", app.ID)
			continue
		}
		data, err := storage.ReadAll(ctx, st, last.Path, 16<<20)
		if err != nil {
			fmt.Fprintf(&b, "; reading its log %s: %v", st.URI(last.Path), err)
			continue
		}
		fmt.Fprintf(&b, "; its log (%s) ends:\n%s", st.URI(last.Path), tail(data, 20))
	}
	return errors.New(strings.TrimRight(b.String(), "\n"))
}

// missingRecords lists the shards (1..N) that recorded nothing.
func missingRecords(ctx context.Context, st storage.Storage, staging string, sp *migrate.ShardPlan) []int {
	var out []int
	for i := range sp.Shards {
		if _, err := st.Stat(ctx, migrate.RecordPath(staging, i+1)); err != nil {
			out = append(out, i+1)
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// tail is the last n lines of data, indented.
func tail(data []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("  | " + l + "\n")
	}
	return b.String()
}
