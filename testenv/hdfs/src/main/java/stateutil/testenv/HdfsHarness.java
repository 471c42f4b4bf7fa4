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
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.SafeModeAction;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNodeTestUtils;
import org.apache.hadoop.security.UserGroupInformation;

import sun.misc.Signal;

/**
 * One NameNode and one DataNode (Hadoop's MiniDFSCluster) on 127.0.0.1 for
 * stateutil's HDFS storage tests.
 *
 * <pre>
 * HdfsHarness [--port N] [--control-port N] [--base-dir DIR] [--yarn CONF_DIR]
 *             [--secure DIR [--protection LEVEL] [--rpc-protection LEVEL]] [--ha CONF_DIR]
 *             [--datanodes N] [--watch-stdin] ADDR_FILE
 * </pre>
 *
 * With --datanodes N (open cluster only) there are N DataNodes and files are
 * replicated min(N, 3) times. {@code stop-datanode [I|random]} then stops the
 * I-th running one (default 0) and answers with its transfer address; {@code
 * start-datanode} restarts every stopped one. {@code corrupt-replica PATH}
 * overwrites the data of one random replica of each block of PATH and answers
 * {@code ok corrupted=ADDR,...} (one DataNode per block); {@code
 * corrupt-replicas PATH} answers {@code ok corrupt=N}, the replicas of PATH's
 * blocks the NameNode knows to be corrupt. {@code file-state PATH} answers
 * {@code ok length=N closed=true|false}, PATH's length and whether it is
 * closed, as the NameNode has them. {@code safemode enter|leave} puts the
 * NameNode in safe mode (it refuses every change with a SafeModeException)
 * or takes it out.
 *
 * With --ha the cluster is highly available: two NameNodes of one nameservice
 * sharing their edits, the first one active, and one DataNode serving both.
 * CONF_DIR gets the core-site.xml and hdfs-site.xml a client needs to reach
 * the nameservice, and the harness announces {@code HDFS_NAMESERVICE=NS} and
 * {@code HDFS_NAMENODES=ADDR,ADDR}. Control commands: {@code failover} (the
 * active NameNode becomes standby, then the other one active), {@code
 * kill-active} (the active one shuts down, then the other one becomes
 * active), {@code restart-namenode} (the one that was shut down comes back as
 * standby); each answers with {@code active=ADDR}. {@code standby} leaves
 * none active ({@code active=none}) until the next {@code failover}.
 *
 * With --secure the cluster is kerberized (see {@link SecureCluster}, which
 * writes what clients need to DIR): a MiniKdc beside it,
 * dfs.data.transfer.protection and hadoop.rpc.protection at LEVEL
 * (authentication, integrity or privacy; default privacy). Its DataNode
 * listens on 127.0.0.1 but names itself 127.0.0.2, so that a client that
 * connects by hostname (dfs.client.use.datanode.hostname) reaches whatever
 * listens there, such as a test's recording proxy, and it also announces
 * {@code HDFS_DATANODE=127.0.0.1:PORT} (its transfer address). The control
 * command {@code protect DATA_LEVEL RPC_LEVEL [aes]} restarts the cluster at
 * those levels (with aes, DataNodes offering dfs.encrypt.data.transfer.cipher.suites
 * AES/CTR/NoPadding), same NameNode port, and answers with the new transfer address.
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
 * does), {@code restart-namenode} (on the same port), {@code status}, {@code shutdown}. The cluster stops on SIGTERM, on {@code shutdown}, and,
 * with --watch-stdin, when stdin closes.
 */
public final class HdfsHarness {
    private static final String LOOPBACK = "127.0.0.1";
    private static final CountDownLatch STOP = new CountDownLatch(1);

    private static final String DATANODE_NAME = "127.0.0.2";

    private MiniDFSCluster cluster;
    // Properties of the stopped DataNodes, in the order they were stopped.
    private final List<MiniDFSCluster.DataNodeProperties> stoppedDataNodes = new ArrayList<>();
    private final int dataNodes;
    // The secured cluster's Kerberos side and how to rebuild it; null when open.
    private final SecureCluster secure;
    private final Configuration conf;
    private final File base;
    // Index of the NameNode kill-active shut down, -1 while both run.
    private int downNameNode = -1;

    private HdfsHarness(MiniDFSCluster cluster, SecureCluster secure, Configuration conf, File base, int dataNodes) {
        this.cluster = cluster;
        this.dataNodes = dataNodes;
        this.secure = secure;
        this.conf = conf;
        this.base = base;
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
        String secureDir = null;
        String protection = "privacy";
        String rpcProtection = "privacy";
        String haConf = null;
        int dataNodes = 1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--control-port" -> controlPort = Integer.parseInt(args[++i]);
                case "--base-dir" -> baseDir = args[++i];
                case "--watch-stdin" -> watchStdin = true;
                case "--yarn" -> yarnConf = args[++i];
                case "--secure" -> secureDir = args[++i];
                case "--protection" -> protection = args[++i];
                case "--rpc-protection" -> rpcProtection = args[++i];
                case "--ha" -> haConf = args[++i];
                case "--datanodes" -> dataNodes = Integer.parseInt(args[++i]);
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

        if (dataNodes != 1 && (secureDir != null || haConf != null)) {
            usage("--datanodes goes with neither --secure nor --ha");
        }
        Configuration conf = new Configuration();
        conf.setInt("dfs.replication", Math.min(dataNodes, 3));
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

        SecureCluster secure = null;
        if (secureDir != null) {
            if (yarnConf != null) {
                usage("--secure and --yarn do not go together");
            }
            secure = SecureCluster.start(new File(base, "kdc"), new File(secureDir));
            secure.secure(conf, protection, rpcProtection);
            conf.set("dfs.datanode.hostname", DATANODE_NAME);
            UserGroupInformation.setConfiguration(conf);
        }

        MiniDFSNNTopology topology = null;
        if (haConf != null) {
            if (secureDir != null || yarnConf != null) {
                usage("--ha goes with neither --secure nor --yarn");
            }
            topology = MiniDFSNNTopology.simpleHATopology();
            // The standby follows the edits closely, the segment being written too, so that
            // a failover has little to catch up, and a restarted standby learns the blocks the
            // DataNode reports (and leaves safe mode) without waiting for the next edit log roll.
            conf.setInt("dfs.ha.tail-edits.period", 1);
            conf.setBoolean("dfs.ha.tail-edits.in-progress", true);
            conf.setBoolean("dfs.ha.standby.checkpoints", false);
            // Listings of a few pages, so that a failover can fall between two of them.
            conf.setInt("dfs.ls.limit", 16);
        }

        MiniDFSCluster cluster = build(conf, base, port, true, topology, dataNodes);
        // Orderly stop on the main thread: inside a JVM shutdown hook Hadoop's
        // own hooks race the cluster's shutdown and it leaves its dirs behind.
        for (String sig : new String[] {"TERM", "INT", "HUP"}) {
            Signal.handle(new Signal(sig), x -> STOP.countDown());
        }
        cluster.waitActive();
        if (topology != null) {
            cluster.transitionToActive(0);
        }
        probe(cluster);
        if (topology != null) {
            writeHaClientConf(cluster, topology.getNameservices().get(0), new File(haConf));
        }
        if (secure != null) {
            shareTestRoot(cluster);
            secure.writeClientConf(cluster.getNameNodePort(), protection, rpcProtection);
            secure.writeYarnConf(cluster.getNameNodePort(), protection, rpcProtection);
            secure.writeCaches();
        }

        org.apache.hadoop.yarn.server.MiniYARNCluster yarn = null;
        if (yarnConf != null) {
            Configuration dfsConf = new Configuration(conf);
            dfsConf.set("fs.defaultFS", "hdfs://" + LOOPBACK + ":" + cluster.getNameNodePort());
            yarn = YarnHarness.startResourceManager(dfsConf, new File(base, "yarn"), new File(yarnConf));
        }

        HdfsHarness h = new HdfsHarness(cluster, secure, conf, base, dataNodes);
        ServerSocket control = new ServerSocket(controlPort, 8, InetAddress.getByName(LOOPBACK));
        Thread acceptor = new Thread(() -> h.serve(control), "hdfs-harness-control");
        acceptor.setDaemon(true);
        acceptor.start();

        String out = "HDFS_NAMENODE=" + nameNodeAddress(cluster, 0) + "\n"
                + "HDFS_CONTROL=" + LOOPBACK + ":" + control.getLocalPort() + "\n"
                + "HDFS_PID=" + ProcessHandle.current().pid() + "\n"
                + (secure == null ? "" : "HDFS_DATANODE=" + transferAddress(cluster) + "\n"
                        + "HDFS_REALM=" + secure.realm() + "\n"
                        + "HDFS_SERVICE_PRINCIPAL=" + secure.servicePrincipal() + "\n"
                        + "HDFS_NOSKEW_PRINCIPAL=" + SecureCluster.NOSKEW_USER + "@" + SecureCluster.NOSKEW_REALM + "\n")
                + (yarn == null ? "" : "YARN_RM_WEB=" + YarnHarness.webAddress(yarn) + "\n")
                + (topology == null ? "" : "HDFS_NAMESERVICE=" + topology.getNameservices().get(0).getId() + "\n"
                        + "HDFS_NAMENODES=" + nameNodeAddress(cluster, 0) + "," + nameNodeAddress(cluster, 1) + "\n");
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
        h.cluster.shutdown(tempBase);
        if (secure != null) {
            secure.stop();
        }
        Files.deleteIfExists(target);
        System.err.println("hdfs-harness: stopped");
        System.exit(0);
    }

    private static void usage(String why) {
        System.err.println("hdfs-harness: " + why);
        System.err.println("usage: HdfsHarness [--port N] [--control-port N] [--base-dir DIR] [--yarn CONF_DIR]"
                + " [--secure DIR [--protection LEVEL] [--rpc-protection LEVEL]] [--ha CONF_DIR] [--datanodes N]"
                + " [--watch-stdin] ADDR_FILE");
        System.exit(2);
    }

    /** A cluster of one NameNode on port, or of the NameNodes of topology (null: one). */
    private static MiniDFSCluster build(Configuration conf, File base, int port, boolean format,
            MiniDFSNNTopology topology, int dataNodes) throws IOException {
        MiniDFSCluster.Builder b = new MiniDFSCluster.Builder(conf, base)
                .numDataNodes(dataNodes)
                .checkDataNodeAddrConfig(true)
                .checkDataNodeHostConfig(true)
                .format(format);
        if (topology != null) {
            b.nnTopology(topology);
        } else {
            b.nameNodePort(port).nameNodeHttpPort(0);
        }
        return b.build();
    }

    private static String nameNodeAddress(MiniDFSCluster cluster, int i) {
        return LOOPBACK + ":" + cluster.getNameNodePort(i);
    }

    /** What a client (Java's or stateutil's) needs to reach the nameservice ns, in dir. */
    private static void writeHaClientConf(MiniDFSCluster cluster, MiniDFSNNTopology.NSConf ns, File dir)
            throws IOException {
        dir.mkdirs();
        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", "hdfs://" + ns.getId());
        Map<String, String> hdfs = new LinkedHashMap<>();
        hdfs.put("dfs.nameservices", ns.getId());
        List<MiniDFSNNTopology.NNConf> nns = ns.getNNs();
        StringBuilder ids = new StringBuilder();
        for (int i = 0; i < nns.size(); i++) {
            String id = nns.get(i).getNnId();
            ids.append(i == 0 ? "" : ",").append(id);
            hdfs.put("dfs.namenode.rpc-address." + ns.getId() + "." + id, nameNodeAddress(cluster, i));
        }
        hdfs.put("dfs.ha.namenodes." + ns.getId(), ids.toString());
        hdfs.put("dfs.client.failover.proxy.provider." + ns.getId(),
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
        SecureCluster.writeXml(new File(dir, "core-site.xml"), core);
        SecureCluster.writeXml(new File(dir, "hdfs-site.xml"), hdfs);
    }

    /** Index of the active NameNode of an HA cluster, -1 if none is. */
    private int activeOrNone() {
        for (int i = 0; i < cluster.getNumNameNodes(); i++) {
            if (i != downNameNode && cluster.getNameNode(i).isActiveState()) {
                return i;
            }
        }
        return -1;
    }

    private int activeNameNode() throws IOException {
        int a = activeOrNone();
        if (a < 0) {
            throw new IOException("no NameNode is active");
        }
        return a;
    }

    /** Runs an HA control command; null if cmd is none. */
    private String haCommand(String cmd) throws IOException {
        switch (cmd) {
            case "failover" -> {
                int a = activeOrNone();
                // With none active (after standby), the first one that runs takes over.
                int next = a >= 0 ? 1 - a : (downNameNode == 0 ? 1 : 0);
                if (next == downNameNode) {
                    return "error the other NameNode is down";
                }
                if (a >= 0) {
                    cluster.transitionToStandby(a);
                }
                cluster.transitionToActive(next);
            }
            case "standby" -> {
                cluster.transitionToStandby(activeNameNode());
                return "ok active=none";
            }
            case "kill-active" -> {
                if (downNameNode >= 0) {
                    return "error a NameNode is down already";
                }
                int a = activeNameNode();
                cluster.shutdownNameNode(a);
                downNameNode = a;
                cluster.transitionToActive(1 - a);
            }
            case "restart-namenode" -> {
                if (downNameNode >= 0) {
                    // It comes back as standby, as an HA NameNode always starts, and
                    // is not announced before the DataNode's reports take it out of safe mode.
                    int i = downNameNode;
                    cluster.restartNameNode(i, false);
                    downNameNode = -1;
                    long deadline = System.nanoTime() + 60_000_000_000L;
                    while (cluster.getNameNode(i).isInSafeMode()) {
                        if (System.nanoTime() > deadline) {
                            return "error the restarted NameNode is still in safe mode after 60 s";
                        }
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException e) {
                            throw new IOException(e);
                        }
                    }
                }
            }
            default -> {
                return null;
            }
        }
        return "ok active=" + nameNodeAddress(cluster, activeNameNode());
    }

    private static String transferAddress(MiniDFSCluster cluster) {
        return LOOPBACK + ":" + cluster.getDataNodes().get(0).getXferPort();
    }

    /** The directory the Go tests write under, open to every user as /tmp is. */
    private static void shareTestRoot(MiniDFSCluster cluster) throws IOException {
        FileSystem fs = cluster.getFileSystem(0);
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path("/stateutil-test");
        fs.mkdirs(root);
        fs.setPermission(root, new FsPermission((short) 01777));
    }

    /**
     * Rebuilds the secured cluster on the same NameNode port and storage with
     * other protection levels, and rewrites the clients' configuration.
     */
    private String protect(String dataProtection, String rpcProtection, boolean aes) throws Exception {
        if (secure == null) {
            return "error the cluster is not secured";
        }
        for (String level : new String[] {dataProtection, rpcProtection}) {
            if (!level.matches("authentication|integrity|privacy")) {
                return "error unknown protection level " + level;
            }
        }
        int port = cluster.getNameNodePort();
        cluster.shutdown(false);
        secure.secure(conf, dataProtection, rpcProtection);
        if (aes) {
            // Production's usual choice: after the SASL handshake, AES instead of DIGEST-MD5's RC4.
            conf.set("dfs.encrypt.data.transfer.cipher.suites", "AES/CTR/NoPadding");
        } else {
            conf.unset("dfs.encrypt.data.transfer.cipher.suites");
        }
        UserGroupInformation.setConfiguration(conf);
        stoppedDataNodes.clear();
        // The builder refuses a configuration that names a base directory already.
        conf.unset(MiniDFSCluster.HDFS_MINIDFS_BASEDIR);
        cluster = build(conf, base, port, false, null, dataNodes);
        cluster.waitActive();
        probe(cluster);
        secure.writeClientConf(port, dataProtection, rpcProtection);
        return "ok datanode=" + transferAddress(cluster) + " protection=" + dataProtection + " rpc-protection=" + rpcProtection
                + (aes ? " cipher=AES/CTR/NoPadding" : "");
    }

    /** Proves the cluster serves a real write and read before it is announced. */
    private static void probe(MiniDFSCluster cluster) throws IOException {
        FileSystem fs = cluster.getFileSystem(0);
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

    /** Stops the which-th running DataNode (null: the first; "random": any). */
    private String stopDataNode(String which) {
        int running = cluster.getDataNodes().size();
        if (running == 0) {
            return stoppedDataNodes.isEmpty() ? "error no datanode to stop" : "ok datanode=down";
        }
        int i = which == null ? 0
                : which.equals("random") ? ThreadLocalRandom.current().nextInt(running)
                : Integer.parseInt(which);
        if (i < 0 || i >= running) {
            return "error only " + running + " datanodes run";
        }
        String addr = LOOPBACK + ":" + cluster.getDataNodes().get(i).getXferPort();
        // stopDataNode shuts it down at once, as a killed process stops answering.
        stoppedDataNodes.add(cluster.stopDataNode(i));
        return "ok datanode=down addr=" + addr;
    }

    private List<LocatedBlock> blocks(String path) throws IOException {
        return cluster.getFileSystem(0).getClient().getLocatedBlocks(path, 0).getLocatedBlocks();
    }

    /** Overwrites one random replica of every block of path. */
    private String corruptReplica(String path) throws IOException {
        StringBuilder out = new StringBuilder("ok corrupted=");
        for (LocatedBlock b : blocks(path)) {
            var locs = b.getLocations();
            var loc = locs[ThreadLocalRandom.current().nextInt(locs.length)];
            int dn = -1;
            for (int i = 0; i < cluster.getDataNodes().size(); i++) {
                if (cluster.getDataNodes().get(i).getXferPort() == loc.getXferPort()) {
                    dn = i;
                }
            }
            if (dn < 0) {
                throw new IOException("no running datanode at " + loc.getXferAddr());
            }
            cluster.getMaterializedReplica(dn, b.getBlock()).corruptData();
            out.append(out.charAt(out.length() - 1) == '=' ? "" : ",").append(LOOPBACK + ":" + loc.getXferPort());
        }
        return out.toString();
    }

    /** The replicas of path's blocks the NameNode holds to be corrupt. */
    private int corruptReplicas(String path) throws IOException {
        var bm = cluster.getNamesystem(0).getBlockManager();
        int n = 0;
        for (LocatedBlock b : blocks(path)) {
            n += bm.numCorruptReplicas(b.getBlock().getLocalBlock());
        }
        return n;
    }

    private synchronized String command(String cmd) throws Exception {
        if (cluster.getNumNameNodes() > 1) {
            String reply = haCommand(cmd);
            if (reply != null) {
                return reply;
            }
        }
        if (cmd.startsWith("protect ")) {
            String[] f = cmd.split("\\s+");
            if (f.length < 3 || f.length > 4 || (f.length == 4 && !f[3].equals("aes"))) {
                return "error usage: protect DATA_LEVEL RPC_LEVEL [aes]";
            }
            return protect(f[1], f[2], f.length == 4);
        }
        String[] f = cmd.split("\\s+");
        switch (f[0]) {
            case "stop-datanode" -> {
                return stopDataNode(f.length > 1 ? f[1] : null);
            }
            case "corrupt-replica" -> {
                return f.length == 2 ? corruptReplica(f[1]) : "error usage: corrupt-replica PATH";
            }
            case "token" -> {
                // token writable|protobuf FILE [SERVICE]: a credentials file of alice's delegation token.
                if (secure == null || f.length < 3 || f.length > 4 || !f[1].matches("writable|protobuf")) {
                    return "error usage (secured cluster only): token writable|protobuf FILE [SERVICE]";
                }
                URI nn = URI.create("hdfs://" + LOOPBACK + ":" + cluster.getNameNodePort());
                return "ok service=" + secure.writeToken(nn, conf, f[1], new File(f[2]), f.length == 4 ? f[3] : null);
            }
            case "read-token" -> {
                return f.length == 2 ? "ok " + SecureCluster.readTokens(conf, new File(f[1])) : "error usage: read-token FILE";
            }
            case "url-token" -> {
                return f.length == 2 ? "ok " + SecureCluster.urlTokens(conf, new File(f[1])) : "error usage: url-token FILE";
            }
            case "cancel-token" -> {
                if (secure == null || f.length != 2) {
                    return "error usage (secured cluster only): cancel-token FILE";
                }
                secure.cancelTokens(conf, new File(f[1]));
                return "ok cancelled";
            }
            case "corrupt-replicas" -> {
                return f.length == 2 ? "ok corrupt=" + corruptReplicas(f[1]) : "error usage: corrupt-replicas PATH";
            }
            case "safemode" -> {
                if (f.length != 2 || !(f[1].equals("enter") || f[1].equals("leave"))) {
                    return "error usage: safemode enter|leave";
                }
                var action = f[1].equals("enter") ? SafeModeAction.SAFEMODE_ENTER : SafeModeAction.SAFEMODE_LEAVE;
                return "ok safemode=" + (cluster.getNameNodeRpc(0).setSafeMode(action, false) ? "on" : "off");
            }
            case "file-state" -> {
                if (f.length != 2) {
                    return "error usage: file-state PATH";
                }
                var located = cluster.getFileSystem(0).getClient().getLocatedBlocks(f[1], 0);
                return "ok length=" + located.getFileLength() + " closed=" + !located.isUnderConstruction();
            }
            default -> {
            }
        }
        switch (cmd) {
            case "start-datanode":
                for (var dn : stoppedDataNodes) {
                    // keepPort: the NameNode still lists the old transfer address.
                    if (!cluster.restartDataNode(dn, true)) {
                        return "error datanode did not restart";
                    }
                }
                stoppedDataNodes.clear();
                cluster.waitActive();
                return "ok datanode=up";
            case "pause-block-reports":
            case "resume-block-reports":
                if (!stoppedDataNodes.isEmpty()) {
                    return "error the datanode is down";
                }
                if (cmd.startsWith("pause")) {
                    DataNodeTestUtils.pauseIBR(cluster.getDataNodes().get(0));
                    return "ok block-reports=paused";
                }
                DataNodeTestUtils.resumeIBR(cluster.getDataNodes().get(0));
                return "ok block-reports=sent";
            case "restart-namenode":
                // Same port and storage: clients must find it again.
                cluster.restartNameNode(true);
                return "ok namenode=" + nameNodeAddress(cluster, 0);
            case "status":
                return "ok datanode=" + (stoppedDataNodes.isEmpty() ? "up" : "down")
                        + " namenode=" + (cluster.getNumNameNodes() == 1 ? nameNodeAddress(cluster, 0)
                                : activeOrNone() < 0 ? "none" : nameNodeAddress(cluster, activeOrNone()));
            case "shutdown":
                return "ok";
            default:
                return "error unknown command " + cmd;
        }
    }
}
