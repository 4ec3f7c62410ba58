package org.litpath.local.neo4j;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.Config;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;
import org.neo4j.io.fs.DefaultFileSystemAbstraction;
import org.neo4j.io.fs.FileSystemAbstraction;
import org.neo4j.kernel.impl.security.User;
import org.neo4j.logging.NullLogProvider;
import org.neo4j.memory.EmptyMemoryTracker;
import org.neo4j.server.security.SecureHasher;
import org.neo4j.server.security.SystemGraphCredential;
import org.neo4j.server.security.auth.CommunitySecurityModule;
import org.neo4j.server.security.auth.FileUserRepository;
import org.neo4j.string.UTF8;

/**
 * Runs Neo4j Community embedded with the Bolt connector on 127.0.0.1 and no HTTP.
 *
 * <p>Usage: {@code LITPATH_NEO4J_PASSWORD=... java -Xmx512m -jar litpath-neo4j.jar --port P
 * --data-dir D [--page-cache 128m]}. Authentication is always on: the password of user
 * {@code neo4j} comes from the environment (never the command line, which every user of the host
 * can read). {@code LOAD CSV} may not read local files ({@code file:} URLs are refused, and the
 * import root is an empty folder of the server), so a client cannot read the files of the user
 * running the server. Prints one line starting with {@code READY} once the default database
 * answers a query, and runs until SIGTERM/SIGINT, when the shutdown hook closes the databases
 * cleanly. Exit status 2 means bad arguments, 3 means the server could not start.
 */
public final class Neo4jLauncher {

    static final String ADMIN_USER = "neo4j";
    static final String PASSWORD_ENV = "LITPATH_NEO4J_PASSWORD";

    private Neo4jLauncher() {
    }

    record Options(String host, int port, Path dataDir, String password, long pageCacheBytes) {
    }

    static Options parse(String[] args) {
        String host = "127.0.0.1";
        Integer port = null;
        Path dataDir = null;
        String password = System.getenv(PASSWORD_ENV);
        long pageCache = ByteUnit.mebiBytes(128);
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> port = Integer.parseInt(value(args, ++i, arg));
                case "--data-dir" -> dataDir = Path.of(value(args, ++i, arg)).toAbsolutePath();
                case "--page-cache" -> pageCache = parseBytes(value(args, ++i, arg));
                case "--host" -> host = value(args, ++i, arg);
                default -> throw new IllegalArgumentException("unknown argument: " + arg);
            }
        }
        if (port == null || port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port <0..65535> is required");
        }
        if (dataDir == null) {
            throw new IllegalArgumentException("--data-dir DIR is required");
        }
        if (password == null || password.isEmpty()) {
            throw new IllegalArgumentException("the password must be in the environment variable " + PASSWORD_ENV);
        }
        return new Options(host, port, dataDir, password, pageCache);
    }

    /** Accepts plain bytes or a k/m/g suffix (binary units), e.g. "128m". */
    static long parseBytes(String text) {
        String value = text.trim().toLowerCase();
        long factor = 1;
        char unit = value.charAt(value.length() - 1);
        if (Character.isLetter(unit)) {
            factor = switch (unit) {
                case 'k' -> ByteUnit.kibiBytes(1);
                case 'm' -> ByteUnit.mebiBytes(1);
                case 'g' -> ByteUnit.gibiBytes(1);
                default -> throw new IllegalArgumentException("bad size: " + text);
            };
            value = value.substring(0, value.length() - 1);
        }
        return Long.parseLong(value) * factor;
    }

    private static String value(String[] args, int index, String flag) {
        if (index >= args.length) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return args[index];
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("litpath-neo4j: " + e.getMessage());
            System.err.println("usage: " + PASSWORD_ENV + "=... java -jar litpath-neo4j.jar --port P --data-dir DIR "
                + "[--page-cache 128m]");
            System.exit(2);
            return;
        }

        // Neo4j binds Bolt only at the end of a long startup; find a taken port in milliseconds.
        String portProblem = portProblem(options.host(), options.port());
        if (portProblem != null) {
            System.err.println("litpath-neo4j: cannot listen on " + options.host() + ":" + options.port()
                + ": " + portProblem);
            System.exit(3);
            return;
        }

        DatabaseManagementService service;
        try {
            Files.createDirectories(options.dataDir());
            // An empty folder of the server: even with file URLs allowed, LOAD CSV could read nothing else.
            Path importRoot = Files.createDirectories(options.dataDir().resolve("import"));
            setInitialPassword(options.dataDir(), options.password());
            service = new DatabaseManagementServiceBuilder(options.dataDir())
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(options.host(), options.port()))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(options.host(), options.port()))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .setConfig(GraphDatabaseSettings.allow_file_urls, false)
                .setConfig(GraphDatabaseSettings.load_csv_file_url_root, importRoot)
                .setConfig(GraphDatabaseSettings.pagecache_memory, options.pageCacheBytes())
                // Bolt's shutdown otherwise idles ~10 s in two 5 s waits for clients; a local
                // server is stopped on purpose, so it need not wait for stragglers that long.
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(2))
                .build();
        } catch (Exception e) {
            System.err.println("litpath-neo4j: cannot start on " + options.host() + ":" + options.port()
                + " with data in " + options.dataDir() + ": " + rootMessage(e));
            System.exit(3);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("litpath-neo4j: shutting down");
            service.shutdown();
            System.out.println("litpath-neo4j: stopped");
            System.out.flush();
            stopped.countDown();
        }, "litpath-neo4j-shutdown"));

        try {
            setAdminPassword(service, options.password());
            GraphDatabaseService db = service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            db.executeTransactionally("RETURN 1");
        } catch (Exception e) {
            System.err.println("litpath-neo4j: started but not usable: " + rootMessage(e));
            System.exit(3);
            return;
        }

        System.out.println("READY litpath-neo4j bolt://" + options.host() + ":" + options.port()
            + " auth=password data=" + options.dataDir());
        System.out.flush();
        stopped.await();
    }

    /**
     * On a new data directory, the admin password the system database starts with (what
     * {@code neo4j-admin dbms set-initial-password} writes): without it the database would come
     * up with the default password {@code neo4j}, open to anyone on the host until
     * {@link #setAdminPassword} runs. An existing system database ignores the file.
     */
    private static void setInitialPassword(Path home, String password) throws Exception {
        Config config = Config.newBuilder().set(GraphDatabaseSettings.neo4j_home, home).build();
        if (Files.exists(config.get(GraphDatabaseSettings.data_directory).resolve("databases").resolve(
                GraphDatabaseSettings.SYSTEM_DATABASE_NAME))) {
            return;
        }
        Path file = CommunitySecurityModule.getInitialUserRepositoryFile(config);
        try (FileSystemAbstraction fs = new DefaultFileSystemAbstraction()) {
            fs.mkdirs(file.getParent());
            fs.deleteFile(file);
            FileUserRepository users = new FileUserRepository(
                fs, file, NullLogProvider.getInstance(), EmptyMemoryTracker.INSTANCE);
            users.start();
            SystemGraphCredential credential =
                SystemGraphCredential.createCredentialForPassword(UTF8.encode(password), new SecureHasher());
            users.create(new User(ADMIN_USER, null, credential, false, false));
            users.shutdown();
        }
    }

    /**
     * Sets the admin user's password without the "change on first login" step. The system
     * database keeps it, so a restart with the same password finds it already set.
     */
    private static void setAdminPassword(DatabaseManagementService service, String password) {
        GraphDatabaseService system = service.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            system.executeTransactionally(
                "ALTER USER " + ADMIN_USER + " SET PASSWORD $password CHANGE NOT REQUIRED",
                Map.of("password", password));
        } catch (RuntimeException e) {
            String message = String.valueOf(rootMessage(e)).toLowerCase();
            if (!message.contains("same")) {
                throw e;
            }
            // Already set to this password by an earlier run; clear a pending change requirement.
            system.executeTransactionally("ALTER USER " + ADMIN_USER + " SET PASSWORD CHANGE NOT REQUIRED");
        }
    }

    /** Null when host:port can be bound now, else why not (e.g. "Address already in use"). */
    static String portProblem(String host, int port) {
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
            return null;
        } catch (IOException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}
