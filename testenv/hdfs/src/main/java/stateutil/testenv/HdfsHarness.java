package stateutil.testenv;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNodeTestUtils;

import sun.misc.Signal;

/**
 * One NameNode and one DataNode (Hadoop's MiniDFSCluster) on 127.0.0.1 for
 * stateutil's HDFS storage tests.
 *
 * <pre>
 * HdfsHarness [--port N] [--control-port N] [--base-dir DIR] [--yarn CONF_DIR] [--watch-stdin] ADDR_FILE
 * </pre>
 *
 * With --yarn it also starts a YARN ResourceManager (see {@link YarnHarness}),
 * writes its configuration to CONF_DIR and adds {@code YARN_RM_WEB=host:port}
 * to what it announces.
 *
 * Once the cluster has written and read back a probe file it prints
 * {@code HDFS_NAMENODE=127.0.0.1:PORT} and {@code HDFS_CONTROL=127.0.0.1:PORT}
 * to stdout and (atomically) to ADDR_FILE. The control port takes one
 * command per line and answers one line ("ok ..." or "error ..."):
 * {@code stop-datanode}, {@code start-datanode}, {@code pause-block-reports},
 * {@code resume-block-reports} (the DataNode holds back, then sends, the
 * reports that tell the NameNode a block is stored, as a busy DataNode
 * does), {@code status}, {@code shutdown}. The cluster stops on SIGTERM, on {@code shutdown}, and,
 * with --watch-stdin, when stdin closes.
 */
public final class HdfsHarness {
    private static final String LOOPBACK = "127.0.0.1";
    private static final CountDownLatch STOP = new CountDownLatch(1);

    private final MiniDFSCluster cluster;
    // Properties of the stopped DataNode, null while it runs.
    private MiniDFSCluster.DataNodeProperties stoppedDataNode;

    private HdfsHarness(MiniDFSCluster cluster) {
        this.cluster = cluster;
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            // Hadoop's non-daemon threads would keep a half-started JVM alive.
            System.err.println("hdfs-harness: failed");
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        int port = 0;
        int controlPort = 0;
        String baseDir = null;
        boolean watchStdin = false;
        String addrFile = null;
        String yarnConf = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--control-port" -> controlPort = Integer.parseInt(args[++i]);
                case "--base-dir" -> baseDir = args[++i];
                case "--watch-stdin" -> watchStdin = true;
                case "--yarn" -> yarnConf = args[++i];
                default -> {
                    if (args[i].startsWith("-") || addrFile != null) {
                        usage("unexpected argument " + args[i]);
                    }
                    addrFile = args[i];
                }
            }
        }
        if (addrFile == null) {
            usage("missing ADDR_FILE");
        }
        boolean tempBase = baseDir == null;
        File base = tempBase
                ? Files.createTempDirectory("stateutil-hdfs-").toFile()
                : new File(baseDir);

        Configuration conf = new Configuration();
        conf.setInt("dfs.replication", 1);
        conf.setInt("dfs.namenode.safemode.extension", 0);
        conf.setLong("dfs.heartbeat.interval", 1);
        // 1 MiB blocks so tests cross block boundaries with little data.
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 1024);
        conf.setLong("dfs.blocksize", 1 << 20);
        // Everything on loopback: the harness must never listen elsewhere.
        conf.set("dfs.namenode.rpc-bind-host", LOOPBACK);
        conf.set("dfs.namenode.http-address", LOOPBACK + ":0");
        conf.set("dfs.namenode.servicerpc-bind-host", LOOPBACK);
        conf.set("dfs.datanode.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.http.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.ipc.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.hostname", LOOPBACK);

        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base)
                .numDataNodes(1)
                .nameNodePort(port)
                .nameNodeHttpPort(0)
                .checkDataNodeAddrConfig(true)
                .checkDataNodeHostConfig(true)
                .format(true)
                .build();
        // Orderly stop on the main thread: inside a JVM shutdown hook Hadoop's
        // own hooks race the cluster's shutdown and it leaves its dirs behind.
        for (String sig : new String[] {"TERM", "INT", "HUP"}) {
            Signal.handle(new Signal(sig), x -> STOP.countDown());
        }
        cluster.waitActive();
        probe(cluster);

        org.apache.hadoop.yarn.server.MiniYARNCluster yarn = null;
        if (yarnConf != null) {
            Configuration dfsConf = new Configuration(conf);
            dfsConf.set("fs.defaultFS", "hdfs://" + LOOPBACK + ":" + cluster.getNameNodePort());
            yarn = YarnHarness.startResourceManager(dfsConf, new File(base, "yarn"), new File(yarnConf));
        }

        HdfsHarness h = new HdfsHarness(cluster);
        ServerSocket control = new ServerSocket(controlPort, 8, InetAddress.getByName(LOOPBACK));
        Thread acceptor = new Thread(() -> h.serve(control), "hdfs-harness-control");
        acceptor.setDaemon(true);
        acceptor.start();

        String out = "HDFS_NAMENODE=" + LOOPBACK + ":" + cluster.getNameNodePort() + "\n"
                + "HDFS_CONTROL=" + LOOPBACK + ":" + control.getLocalPort() + "\n"
                + "HDFS_PID=" + ProcessHandle.current().pid() + "\n"
                + (yarn == null ? "" : "YARN_RM_WEB=" + YarnHarness.webAddress(yarn) + "\n");
        Path target = Path.of(addrFile).toAbsolutePath();
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        Files.writeString(tmp, out, StandardCharsets.UTF_8);
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        System.out.print(out);
        System.out.flush();

        if (watchStdin) {
            Thread t = new Thread(() -> {
                try {
                    InputStream in = System.in;
                    byte[] buf = new byte[256];
                    while (in.read(buf) >= 0) {
                        // Discard; only EOF matters.
                    }
                } catch (IOException e) {
                    // A broken stdin counts as closed.
                }
                STOP.countDown();
            }, "hdfs-harness-stdin");
            t.setDaemon(true);
            t.start();
        }
        STOP.await();
        System.err.println("hdfs-harness: shutting down");
        control.close();
        if (yarn != null) {
            yarn.stop();
        }
        cluster.shutdown(tempBase);
        Files.deleteIfExists(target);
        System.err.println("hdfs-harness: stopped");
        System.exit(0);
    }

    private static void usage(String why) {
        System.err.println("hdfs-harness: " + why);
        System.err.println("usage: HdfsHarness [--port N] [--control-port N] [--base-dir DIR] [--yarn CONF_DIR] [--watch-stdin] ADDR_FILE");
        System.exit(2);
    }

    /** Proves the cluster serves a real write and read before it is announced. */
    private static void probe(MiniDFSCluster cluster) throws IOException {
        FileSystem fs = cluster.getFileSystem();
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path("/.harness-probe");
        byte[] want = "probe".getBytes(StandardCharsets.UTF_8);
        try (OutputStream o = fs.create(p, true)) {
            o.write(want);
        }
        byte[] got = new byte[want.length];
        try (var i = fs.open(p)) {
            i.readFully(got);
        }
        if (!Arrays.equals(want, got)) {
            throw new IOException("probe read back wrong bytes");
        }
        fs.delete(p, false);
    }

    private void serve(ServerSocket control) {
        while (true) {
            try {
                Socket s = control.accept();
                Thread t = new Thread(() -> session(s), "hdfs-harness-session");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (!control.isClosed()) {
                    System.err.println("hdfs-harness: control accept: " + e);
                }
                return;
            }
        }
    }

    private void session(Socket s) {
        try (s;
             BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter w = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                String cmd = line.trim();
                if (cmd.isEmpty()) {
                    continue;
                }
                String reply;
                try {
                    reply = command(cmd);
                } catch (Exception e) {
                    reply = "error " + e.toString().replace('\n', ' ');
                }
                w.println(reply);
                if (cmd.equals("shutdown")) {
                    STOP.countDown();
                    return;
                }
            }
        } catch (IOException e) {
            System.err.println("hdfs-harness: control session: " + e);
        }
    }

    private synchronized String command(String cmd) throws IOException {
        switch (cmd) {
            case "stop-datanode":
                if (stoppedDataNode == null) {
                    stoppedDataNode = cluster.stopDataNode(0);
                    if (stoppedDataNode == null) {
                        return "error no datanode to stop";
                    }
                }
                return "ok datanode=down";
            case "start-datanode":
                if (stoppedDataNode != null) {
                    // keepPort: the NameNode still lists the old transfer address.
                    if (!cluster.restartDataNode(stoppedDataNode, true)) {
                        return "error datanode did not restart";
                    }
                    stoppedDataNode = null;
                    cluster.waitActive();
                }
                return "ok datanode=up";
            case "pause-block-reports":
            case "resume-block-reports":
                if (stoppedDataNode != null) {
                    return "error the datanode is down";
                }
                if (cmd.startsWith("pause")) {
                    DataNodeTestUtils.pauseIBR(cluster.getDataNodes().get(0));
                    return "ok block-reports=paused";
                }
                DataNodeTestUtils.resumeIBR(cluster.getDataNodes().get(0));
                return "ok block-reports=sent";
            case "status":
                return "ok datanode=" + (stoppedDataNode == null ? "up" : "down")
                        + " namenode=" + LOOPBACK + ":" + cluster.getNameNodePort();
            case "shutdown":
                return "ok";
            default:
                return "error unknown command " + cmd;
        }
    }
}
