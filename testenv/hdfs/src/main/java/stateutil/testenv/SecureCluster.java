package stateutil.testenv;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.security.PrivilegedExceptionAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.security.token.delegation.DelegationTokenIdentifier;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.kerby.kerberos.kerb.client.KrbClient;
import org.apache.kerby.kerberos.kerb.client.KrbConfig;
import org.apache.kerby.kerberos.kerb.client.KrbConfigKey;
import org.apache.kerby.kerberos.kerb.client.KrbOption;
import org.apache.kerby.kerberos.kerb.KrbException;
import org.apache.kerby.kerberos.kerb.server.KdcConfigKey;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;
import org.apache.kerby.KOptions;
import org.apache.kerby.kerberos.kerb.type.ticket.TgtTicket;

/**
 * The Kerberos half of the secured harness: Hadoop's MiniKdc on 127.0.0.1,
 * the HDFS service principal (NameNode and DataNode share it, as in
 * Hadoop's own secure tests) and two users, and the files a client needs,
 * all in one directory:
 *
 * <pre>
 * krb5.conf           the realm and its KDC (MIT format)
 * hdfs.keytab         hdfs/HOST and HTTP/HOST, the services' keys
 * alice.keytab        the user alice
 * yarn.keytab         yarn/HOST, the ResourceManager's and NodeManager's key
 * yarn-server/        the secured YARN's settings, keytabs included
 * alice.ccache        a credential cache holding a ticket of alice
 * alice-expired.ccache  one whose ticket has expired
 * conf/core-site.xml, conf/hdfs-site.xml, conf/yarn-site.xml  a client's HADOOP_CONF_DIR
 * noskew-krb5.conf    the realm served by a second KDC, which allows no
 *                     clock skew at all, so that every login there fails as
 *                     one from a machine whose clock is off does
 * carol.keytab        carol, whom only that KDC knows
 * </pre>
 *
 * HOST is the canonical name of 127.0.0.1, which is what Hadoop's clients
 * put in for _HOST. The user bob exists in the KDC but in no keytab.
 */
final class SecureCluster {
    static final String USER = "alice";
    static final String OTHER_USER = "bob";
    // The MiniKdc's realm: given a realm of its own, the second KDC in this
    // JVM refused its requests as WRONG_REALM; it serves the same realm
    // with other users instead.
    static final String NOSKEW_REALM = "EXAMPLE.COM";
    static final String NOSKEW_USER = "carol";
    // Short enough to have run out by the time a test looks at it.
    private static final long EXPIRED_LIFETIME_MS = 2000;

    private final MiniKdc kdc;
    private SimpleKdcServer noSkewKdc;
    private final File dir;
    final String host;
    final File serviceKeytab;
    final File userKeytab;
    final File yarnKeytab;

    private SecureCluster(MiniKdc kdc, File dir, String host) {
        this.kdc = kdc;
        this.dir = dir;
        this.host = host;
        this.serviceKeytab = new File(dir, "hdfs.keytab");
        this.userKeytab = new File(dir, USER + ".keytab");
        this.yarnKeytab = new File(dir, "yarn.keytab");
    }

    static SecureCluster start(File work, File dir) throws Exception {
        Properties p = MiniKdc.createConf();
        p.setProperty(MiniKdc.KDC_BIND_ADDRESS, "127.0.0.1");
        // So that it issues the expired cache's ticket of a few seconds.
        p.setProperty(MiniKdc.MIN_TICKET_LIFETIME, "0");
        Files.createDirectories(work.toPath());
        Files.createDirectories(new File(dir, "conf").toPath());
        MiniKdc kdc = new MiniKdc(p, work);
        String host = InetAddress.getByName("127.0.0.1").getCanonicalHostName().toLowerCase();
        SecureCluster s = new SecureCluster(kdc, dir, host);
        // Before the MiniKdc: it is the MiniKdc's krb5.conf that this JVM
        // must be left with.
        s.startNoSkewKdc(new File(work, "noskew"));
        kdc.start();
        kdc.createPrincipal(s.serviceKeytab, "hdfs/" + host, "HTTP/" + host);
        kdc.createPrincipal(s.userKeytab, USER);
        kdc.createPrincipal(s.yarnKeytab, "yarn/" + host);
        kdc.createPrincipal(OTHER_USER, UUID.randomUUID().toString());
        s.writeKrb5Conf();
        return s;
    }

    private void startNoSkewKdc(File work) throws Exception {
        Files.createDirectories(work.toPath());
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = free.getLocalPort();
        }
        SimpleKdcServer k = new SimpleKdcServer();
        k.setWorkDir(work);
        k.setKdcHost("127.0.0.1");
        k.setKdcRealm(NOSKEW_REALM);
        k.setAllowUdp(false);
        k.setAllowTcp(true);
        k.setKdcTcpPort(port);
        // Kerby's check is |client time - KDC time| < skew: with 0 it never
        // holds. Kerby reports a skewed pre-authentication as a failed one,
        // so logins need none here, and the skew shows where a ticket is
        // asked for with the login's ticket: KRB_AP_ERR_SKEW, as any KDC has it.
        k.getKdcConfig().setLong(KdcConfigKey.ALLOWABLE_CLOCKSKEW, 0L);
        k.getKdcConfig().setBoolean(KdcConfigKey.PREAUTH_REQUIRED, false);
        k.init();
        k.start();
        noSkewKdc = k;
        k.createAndExportPrincipals(new File(dir, NOSKEW_USER + ".keytab"), NOSKEW_USER + "@" + NOSKEW_REALM);
        k.createPrincipal("hdfs/" + host + "@" + NOSKEW_REALM, UUID.randomUUID().toString());
        atomicWrite(new File(dir, "noskew-krb5.conf"), krb5Conf(NOSKEW_REALM, port));
    }

    String realm() {
        return kdc.getRealm();
    }

    String principal(String name) {
        return name + "@" + kdc.getRealm();
    }

    String servicePrincipal() {
        return principal("hdfs/" + host);
    }

    File file(String name) {
        return new File(dir, name);
    }

    /**
     * The settings of a kerberized cluster whose DataNode speaks SASL on an
     * unprivileged port: dfs.data.transfer.protection is then required, and
     * ignore.secure.ports.for.testing stands in for the HTTPS a production
     * DataNode would need instead of privileged ports.
     */
    void secure(Configuration conf, String dataProtection, String rpcProtection) {
        String service = servicePrincipal();
        String http = principal("HTTP/" + host);
        conf.set("hadoop.security.authentication", "kerberos");
        conf.set("hadoop.rpc.protection", rpcProtection);
        conf.set("dfs.namenode.kerberos.principal", service);
        conf.set("dfs.namenode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.datanode.kerberos.principal", service);
        conf.set("dfs.datanode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.web.authentication.kerberos.principal", http);
        conf.set("dfs.web.authentication.kerberos.keytab", serviceKeytab.getAbsolutePath());
        conf.set("dfs.namenode.kerberos.internal.spnego.principal", http);
        conf.setBoolean("dfs.block.access.token.enable", true);
        conf.set("dfs.data.transfer.protection", dataProtection);
        conf.setBoolean("ignore.secure.ports.for.testing", true);
        conf.setBoolean("dfs.webhdfs.enabled", false);
    }

    /** A client's HADOOP_CONF_DIR for the cluster at namenodePort, written atomically. */
    void writeClientConf(int namenodePort, String dataProtection, String rpcProtection) throws IOException {
        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", "hdfs://127.0.0.1:" + namenodePort);
        core.put("hadoop.security.authentication", "kerberos");
        core.put("hadoop.rpc.protection", rpcProtection);
        Map<String, String> hdfs = new LinkedHashMap<>();
        hdfs.put("dfs.namenode.kerberos.principal", "hdfs/_HOST@" + kdc.getRealm());
        hdfs.put("dfs.data.transfer.protection", dataProtection);
        writeXml(new File(dir, "conf/core-site.xml"), core);
        writeXml(new File(dir, "conf/hdfs-site.xml"), hdfs);
    }

    /**
     * The secured YARN's settings in yarn-server/: core-site.xml and
     * hdfs-site.xml as a client of the cluster has them plus SPNEGO on the
     * web endpoints, and yarn-site.xml with the principals of the
     * ResourceManager and NodeManager (both yarn/HOST, whose short name
     * "yarn" renews the applications' HDFS tokens) and every keytab, which
     * no container's configuration repeats. The client's conf/ gets the
     * principals alone.
     */
    void writeYarnConf(int namenodePort, String dataProtection, String rpcProtection) throws IOException {
        String yarn = principal("yarn/" + host);
        String http = principal("HTTP/" + host);
        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", "hdfs://127.0.0.1:" + namenodePort);
        core.put("hadoop.security.authentication", "kerberos");
        core.put("hadoop.rpc.protection", rpcProtection);
        core.put("hadoop.http.filter.initializers", "org.apache.hadoop.security.AuthenticationFilterInitializer");
        core.put("hadoop.http.authentication.type", "kerberos");
        core.put("hadoop.http.authentication.simple.anonymous.allowed", "false");
        core.put("hadoop.http.authentication.kerberos.principal", http);
        Map<String, String> hdfs = new LinkedHashMap<>();
        hdfs.put("dfs.namenode.kerberos.principal", "hdfs/_HOST@" + kdc.getRealm());
        hdfs.put("dfs.data.transfer.protection", dataProtection);
        Map<String, String> site = new LinkedHashMap<>();
        site.put("yarn.resourcemanager.principal", yarn);
        site.put("yarn.resourcemanager.keytab", yarnKeytab.getAbsolutePath());
        site.put("yarn.nodemanager.principal", yarn);
        site.put("yarn.nodemanager.keytab", yarnKeytab.getAbsolutePath());
        site.put("hadoop.http.authentication.kerberos.keytab", serviceKeytab.getAbsolutePath());
        // What a node's /etc/krb5.conf would be to the containers' JVMs
        // (the ApplicationMaster's Hadoop needs the default realm).
        site.put("yarn.nodemanager.admin-env", "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,JAVA_TOOL_OPTIONS=-Djava.security.krb5.conf="
                + new File(dir, "krb5.conf").getAbsolutePath());
        File server = new File(dir, "yarn-server");
        Files.createDirectories(server.toPath());
        writeXml(new File(server, "core-site.xml"), core);
        writeXml(new File(server, "hdfs-site.xml"), hdfs);
        writeXml(new File(server, "yarn-site.xml"), site);
        Map<String, String> client = new LinkedHashMap<>();
        client.put("yarn.resourcemanager.principal", yarn);
        client.put("hadoop.http.authentication.kerberos.principal", http);
        writeXml(new File(dir, "conf/yarn-site.xml"), client);
    }

    /** The credential caches of alice: one valid for a day, one expired. */
    void writeCaches() throws Exception {
        writeCache(new File(dir, USER + ".ccache"), 0);
        File expired = new File(dir, USER + "-expired.ccache");
        writeCache(expired, EXPIRED_LIFETIME_MS);
        // It is of no use to a test until its end time has passed.
        Thread.sleep(EXPIRED_LIFETIME_MS + 1000);
    }

    /** Asks the KDC for a ticket of alice (lifetimeMs 0: the KDC's default) and stores it. */
    private void writeCache(File target, long lifetimeMs) throws KrbException, IOException {
        KrbConfig cfg = new KrbConfig();
        cfg.setString(KrbConfigKey.DEFAULT_REALM, kdc.getRealm());
        cfg.setString(KrbConfigKey.KDC_HOST, "127.0.0.1");
        cfg.setInt(KrbConfigKey.KDC_TCP_PORT, kdc.getPort());
        cfg.setBoolean(KrbConfigKey.KDC_ALLOW_UDP, false);
        KrbClient client = new KrbClient(cfg);
        client.setKdcRealm(kdc.getRealm());
        client.setKdcHost("127.0.0.1");
        client.setKdcTcpPort(kdc.getPort());
        client.setAllowUdp(false);
        client.init();
        KOptions opts = new KOptions();
        opts.add(KrbOption.CLIENT_PRINCIPAL, principal(USER));
        opts.add(KrbOption.USE_KEYTAB, true);
        opts.add(KrbOption.KEYTAB_FILE, userKeytab);
        if (lifetimeMs > 0) {
            opts.add(KrbOption.LIFE_TIME, (int) (lifetimeMs / 1000));
        }
        TgtTicket tgt = client.requestTgt(opts);
        File tmp = new File(target.getPath() + ".tmp");
        Files.deleteIfExists(tmp.toPath());
        client.storeTicket(tgt, tmp);
        Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private void writeKrb5Conf() throws IOException {
        atomicWrite(new File(dir, "krb5.conf"), krb5Conf(kdc.getRealm(), kdc.getPort()));
    }

    private static String krb5Conf(String realm, int port) {
        return "[libdefaults]\n"
                + "  default_realm = " + realm + "\n"
                + "  udp_preference_limit = 1\n"
                + "  dns_lookup_kdc = false\n"
                + "  dns_lookup_realm = false\n"
                + "[realms]\n"
                + "  " + realm + " = {\n"
                + "    kdc = 127.0.0.1:" + port + "\n"
                + "  }\n";
    }

    static void writeXml(File f, Map<String, String> props) throws IOException {
        StringBuilder b = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        for (Map.Entry<String, String> e : props.entrySet()) {
            b.append("  <property><name>").append(e.getKey()).append("</name><value>")
                    .append(e.getValue()).append("</value></property>\n");
        }
        b.append("</configuration>\n");
        atomicWrite(f, b.toString());
    }

    private static void atomicWrite(File f, String text) throws IOException {
        Path target = f.toPath();
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Has Hadoop's own client, logged in as alice from her keytab, ask the
     * NameNode at nn for a delegation token that "yarn" may renew, and
     * writes it as a credentials file in format (writable: version 0,
     * protobuf: version 1), under service when that is not null (a token
     * for another NameNode). Returns the token's service.
     */
    String writeToken(URI nn, Configuration conf, String format, File target, String service) throws Exception {
        UserGroupInformation alice = UserGroupInformation.loginUserFromKeytabAndReturnUGI(principal(USER), userKeytab.getAbsolutePath());
        Credentials creds = new Credentials();
        alice.doAs((PrivilegedExceptionAction<Void>) () -> {
            try (FileSystem fs = FileSystem.newInstance(nn, conf)) {
                fs.addDelegationTokens("yarn", creds);
            }
            return null;
        });
        String got = null;
        for (Token<?> t : creds.getAllTokens()) {
            if (service != null) {
                t.setService(new Text(service));
            }
            got = t.getService().toString();
        }
        Credentials.SerializedFormat f = format.equals("writable") ? Credentials.SerializedFormat.WRITABLE
                : Credentials.SerializedFormat.PROTOBUF;
        File tmp = new File(target.getPath() + ".tmp");
        creds.writeTokenStorageFile(new org.apache.hadoop.fs.Path(tmp.toURI()), conf, f);
        Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return got;
    }

    /**
     * Each token of the credentials file source as Hadoop's
     * Token.encodeToUrlString writes it (what YARN's REST submission
     * takes), space-separated.
     */
    static String urlTokens(Configuration conf, File source) throws IOException {
        StringBuilder out = new StringBuilder();
        for (Token<?> t : Credentials.readTokenStorageFile(source, conf).getAllTokens()) {
            out.append(out.length() == 0 ? "" : " ").append(t.encodeToUrlString());
        }
        return out.toString();
    }

    /**
     * What Hadoop reads in the credentials file source: each token's kind
     * and service, and its identifier's owner and renewer as the NameNode
     * wrote them.
     */
    static String readTokens(Configuration conf, File source) throws IOException {
        StringBuilder out = new StringBuilder();
        for (Token<?> t : Credentials.readTokenStorageFile(source, conf).getAllTokens()) {
            DelegationTokenIdentifier id = new DelegationTokenIdentifier();
            id.readFields(new DataInputStream(new ByteArrayInputStream(t.getIdentifier())));
            out.append(out.length() == 0 ? "" : " ").append("kind=").append(t.getKind()).append(" service=").append(t.getService())
                    .append(" owner=").append(id.getOwner()).append(" renewer=").append(id.getRenewer());
        }
        return out.toString();
    }

    /** Cancels, as alice, every token of the credentials file source. */
    void cancelTokens(Configuration conf, File source) throws Exception {
        UserGroupInformation alice = UserGroupInformation.loginUserFromKeytabAndReturnUGI(principal(USER), userKeytab.getAbsolutePath());
        Credentials creds = Credentials.readTokenStorageFile(source, conf);
        alice.doAs((PrivilegedExceptionAction<Void>) () -> {
            for (Token<?> t : creds.getAllTokens()) {
                t.cancel(conf);
            }
            return null;
        });
    }

    void stop() throws KrbException {
        kdc.stop();
        if (noSkewKdc != null) {
            noSkewKdc.stop();
        }
    }
}
