package stateutil.testenv;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;

/**
 * The YARN half of the harness: a ResourceManager (MiniYARNCluster with no
 * NodeManager of its own) beside the MiniDFSCluster, and, in a JVM of its
 * own, one NodeManager. The ResourceManager's and the NodeManager's web
 * apps clash in one JVM (every REST call reaches the NodeManager), so the
 * NodeManager is a separate process:
 *
 * <pre>
 * YarnHarness nodemanager CONF_DIR ADDR_FILE
 * </pre>
 *
 * It reads CONF_DIR/yarn-site.xml (written by {@link #startResourceManager}),
 * registers with the ResourceManager and writes {@code YARN_NM=host:port}
 * to ADDR_FILE; it stops on SIGTERM.
 *
 * <p>The secured cluster's ResourceManager runs in a JVM of its own too: its
 * Kerberos login replaces the JVM's login user, which the kerberized
 * MiniDFSCluster's JVM must keep:
 *
 * <pre>
 * YarnHarness resourcemanager SERVER_CONF CONF_DIR ADDR_FILE
 * YarnHarness nodemanager CONF_DIR ADDR_FILE SERVER_CONF
 * </pre>
 *
 * SERVER_CONF holds the settings with the keytabs ({@link SecureCluster#writeYarnConf});
 * the ResourceManager writes CONF_DIR without them, for the NodeManager,
 * the ApplicationMasters and the containers, and {@code YARN_RM_WEB=host:port}
 * to ADDR_FILE.
 */
public final class YarnHarness {
    private static final String LOOPBACK = "127.0.0.1";

    private YarnHarness() {}

    /** The base configuration of the ResourceManager and the NodeManager. */
    static void configure(Configuration conf, File base) {
        conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
        conf.set(YarnConfiguration.RM_HOSTNAME, LOOPBACK);
        conf.set(YarnConfiguration.RM_BIND_HOST, LOOPBACK);
        conf.set(YarnConfiguration.NM_BIND_HOST, LOOPBACK);
        conf.set(YarnConfiguration.RM_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.RM_SCHEDULER_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.RM_ADMIN_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, LOOPBACK + ":0");
        conf.set("yarn.scheduler.capacity.root.queues", "default");
        conf.set("yarn.scheduler.capacity.root.default.capacity", "100");
        conf.set("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 64);
        conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 1);
        conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, false);
        conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
        conf.setInt(YarnConfiguration.NM_VCORES, 8);
        conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
        conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
        // A nearly full test disk must not take the only node out.
        conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
        conf.setLong(YarnConfiguration.NM_MIN_PER_DISK_FREE_SPACE_MB, 0);
        // Keep container logs and working dirs a while after an app ends,
        // so that tests (and people) can read them.
        conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 600);
        conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 200);
        conf.setLong("yarn.am.liveness-monitor.expiry-interval-ms", 60_000);
        conf.set(YarnConfiguration.NM_LOCAL_DIRS, new File(base, "nm-local").getAbsolutePath());
        conf.set(YarnConfiguration.NM_LOG_DIRS, new File(base, "nm-logs").getAbsolutePath());
        conf.set(YarnConfiguration.YARN_APPLICATION_CLASSPATH, "");
    }

    /**
     * Starts the ResourceManager and writes CONF_DIR/{core,yarn}-site.xml
     * with its actual addresses, for the NodeManager, the
     * ApplicationMasters and stateutil's tests. Returns the cluster and its
     * web address.
     */
    static MiniYARNCluster startResourceManager(Configuration dfsConf, File base, File confDir) throws IOException {
        YarnConfiguration conf = new YarnConfiguration(dfsConf);
        configure(conf, base);
        Configuration core = new Configuration(false);
        core.set("fs.defaultFS", dfsConf.get("fs.defaultFS"));
        return start(conf, confDir, core);
    }

    /** Starts the ResourceManager of conf, then writes CONF_DIR's yarn-site.xml and core-site.xml (core). */
    private static MiniYARNCluster start(YarnConfiguration conf, File confDir, Configuration core) throws IOException {
        MiniYARNCluster yarn = new MiniYARNCluster("stateutil", 1, 0, 1, 1);
        yarn.init(conf);
        // Hadoop 3.3.6's token renewer pool tracker spins on an idle cluster
        // (YARN-11178): a core's worth of CPU for as long as the secured
        // ResourceManager runs. Its renewals go on without it.
        var renewer = yarn.getResourceManager().getRMContext().getDelegationTokenRenewer();
        if (renewer != null) {
            renewer.setDelegationTokenRenewerPoolTracker(false);
        }
        yarn.start();
        Configuration live = yarn.getConfig();
        if (!confDir.mkdirs() && !confDir.isDirectory()) {
            throw new IOException("cannot create " + confDir);
        }
        Configuration site = new Configuration(false);
        for (var e : live) {
            String k = e.getKey();
            if ((k.startsWith("yarn.") || k.startsWith("fs.defaultFS") || k.startsWith("hadoop.security")) && !k.endsWith(".keytab")) {
                site.set(k, live.get(k));
            }
        }
        site.setBoolean(YarnConfiguration.IS_MINI_YARN_CLUSTER, true);
        write(site, new File(confDir, "yarn-site.xml"));
        write(core, new File(confDir, "core-site.xml"));
        return yarn;
    }

    static String webAddress(MiniYARNCluster yarn) {
        return yarn.getConfig().get(YarnConfiguration.RM_WEBAPP_ADDRESS);
    }

    private static void write(Configuration conf, File f) throws IOException {
        File tmp = new File(f.getPath() + ".tmp");
        try (OutputStream o = new FileOutputStream(tmp)) {
            conf.writeXml(o);
        }
        Files.move(tmp.toPath(), f.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    public static void main(String[] args) {
        try {
            if (args.length == 4 && args[0].equals("resourcemanager")) {
                runResourceManager(new File(args[1]), new File(args[2]), Path.of(args[3]));
            } else if ((args.length == 3 || args.length == 4) && args[0].equals("nodemanager")) {
                runNodeManager(new File(args[1]), Path.of(args[2]), args.length == 4 ? new File(args[3]) : null);
            } else {
                System.err.println("usage: YarnHarness nodemanager CONF_DIR ADDR_FILE [SERVER_CONF] | resourcemanager SERVER_CONF CONF_DIR ADDR_FILE");
                System.exit(2);
            }
        } catch (Throwable e) {
            System.err.println("yarn-harness: failed");
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void runResourceManager(File serverConf, File confDir, Path addrFile) throws Exception {
        YarnConfiguration conf = new YarnConfiguration();
        for (String f : new String[] {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
            conf.addResource(new org.apache.hadoop.fs.Path(new File(serverConf, f).toURI()));
        }
        configure(conf, confDir.getParentFile());
        // Its node attributes on local disk, not on fs.defaultFS.
        conf.set("yarn.node-attribute.fs-store.root-dir", new File(confDir.getParentFile(), "rm-node-attributes").toURI().toString());
        UserGroupInformation.setConfiguration(conf);
        // MiniYARNCluster's ResourceManager does not log in itself.
        UserGroupInformation.loginUserFromKeytab(conf.get(YarnConfiguration.RM_PRINCIPAL), conf.get(YarnConfiguration.RM_KEYTAB));
        Configuration core = new Configuration(false);
        for (String f : new String[] {"core-site.xml", "hdfs-site.xml"}) {
            core.addResource(new org.apache.hadoop.fs.Path(new File(serverConf, f).toURI()));
        }
        MiniYARNCluster yarn = start(conf, confDir, core);
        // HDFS's settings too, for the NodeManager's localizer and the
        // ApplicationMasters, which have CONF_DIR on their classpath.
        Files.copy(new File(serverConf, "hdfs-site.xml").toPath(), new File(confDir, "hdfs-site.xml").toPath(), StandardCopyOption.REPLACE_EXISTING);
        java.util.concurrent.CountDownLatch stop = new java.util.concurrent.CountDownLatch(1);
        for (String sig : new String[] {"TERM", "INT", "HUP"}) {
            sun.misc.Signal.handle(new sun.misc.Signal(sig), x -> stop.countDown());
        }
        announce(addrFile, "YARN_RM_WEB=" + webAddress(yarn) + "\n");
        stop.await();
        System.err.println("yarn-harness: stopping the resourcemanager");
        yarn.stop();
        Files.deleteIfExists(addrFile);
        System.exit(0);
    }

    private static void announce(Path addrFile, String out) throws IOException {
        Path tmp = addrFile.resolveSibling(addrFile.getFileName() + ".tmp");
        Files.writeString(tmp, out, StandardCharsets.UTF_8);
        Files.move(tmp, addrFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        System.out.print(out);
        System.out.flush();
    }

    private static void runNodeManager(File confDir, Path addrFile, File serverConf) throws Exception {
        YarnConfiguration conf = new YarnConfiguration();
        if (serverConf != null) {
            conf.addResource(new org.apache.hadoop.fs.Path(new File(serverConf, "yarn-site.xml").toURI()));
        }
        conf.addResource(new org.apache.hadoop.fs.Path(new File(confDir, "core-site.xml").toURI()));
        conf.addResource(new org.apache.hadoop.fs.Path(new File(confDir, "yarn-site.xml").toURI()));
        conf.set(YarnConfiguration.NM_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, LOOPBACK + ":0");
        conf.set(YarnConfiguration.NM_COLLECTOR_SERVICE_ADDRESS, LOOPBACK + ":0");
        conf.setInt("yarn.nodemanager.amrmproxy.address", 0);
        conf.set("yarn.nodemanager.hostname", LOOPBACK);
        conf.setInt(YarnConfiguration.NM_CONTAINER_MGR_THREAD_COUNT, 4);
        conf.setBoolean(YarnConfiguration.NM_RECOVERY_ENABLED, false);
        // Hadoop would take yarn.nodemanager.local-dirs from the RM's side;
        // this NodeManager gets dirs of its own.
        File base = confDir.getParentFile();
        conf.set(YarnConfiguration.NM_LOCAL_DIRS, new File(base, "nm-local").getAbsolutePath());
        conf.set(YarnConfiguration.NM_LOG_DIRS, new File(base, "nm-logs").getAbsolutePath());
        NodeManager nm = new NodeManager();
        java.util.concurrent.CountDownLatch stop = new java.util.concurrent.CountDownLatch(1);
        for (String sig : new String[] {"TERM", "INT", "HUP"}) {
            sun.misc.Signal.handle(new sun.misc.Signal(sig), x -> stop.countDown());
        }
        UserGroupInformation.setConfiguration(conf);
        if (serverConf != null) {
            UserGroupInformation.loginUserFromKeytab(conf.get(YarnConfiguration.NM_PRINCIPAL), conf.get(YarnConfiguration.NM_KEYTAB));
        }
        nm.init(conf);
        nm.start();
        announce(addrFile, "YARN_NM=" + nm.getNMContext().getNodeId() + "\n"
                + "YARN_NM_WEB=" + LOOPBACK + ":" + nm.getNMContext().getHttpPort() + "\n");
        stop.await();
        System.err.println("yarn-harness: stopping the nodemanager");
        nm.stop();
        Files.deleteIfExists(addrFile);
        System.exit(0);
    }

}
