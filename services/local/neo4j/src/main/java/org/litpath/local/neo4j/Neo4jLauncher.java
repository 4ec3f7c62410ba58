package org.litpath.local.neo4j;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

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

/**
 * Runs Neo4j Community embedded with the Bolt connector on 127.0.0.1 and no HTTP.
 *
 * <p>Usage: {@code java -Xmx512m -jar litpath-neo4j.jar --port P --data-dir D
 * [--auth none | --password SECRET] [--page-cache 128m]}. The password may instead come from the
 * environment variable {@code LITPATH_NEO4J_PASSWORD}, which keeps it out of the process list.
 * Prints one line starting with {@code READY} once the default database answers a query, and
 * runs until SIGTERM/SIGINT, when the shutdown hook closes the databases cleanly.
 * Exit status 2 means bad arguments, 3 means the server could not start.
 */
public final class Neo4jLauncher {

    static final String ADMIN_USER = "neo4j";

    private Neo4jLauncher() {
    }

    record Options(String host, int port, Path dataDir, String password, long pageCacheBytes) {
        boolean authEnabled() {
            return password != null;
        }
    }

    static Options parse(String[] args) {
        String host = "127.0.0.1";
        Integer port = null;
        Path dataDir = null;
        String password = System.getenv("LITPATH_NEO4J_PASSWORD");
        if (password != null && password.isEmpty()) {
            password = null;
        }
        long pageCache = ByteUnit.mebiBytes(128);
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> port = Integer.parseInt(value(args, ++i, arg));
                case "--data-dir" -> dataDir = Path.of(value(args, ++i, arg)).toAbsolutePath();
                case "--password" -> password = value(args, ++i, arg);
                case "--auth" -> {
                    String mode = value(args, ++i, arg);
                    if (!mode.equals("none")) {
                        throw new IllegalArgumentException("--auth takes only 'none'; use --password to enable auth");
                    }
                    password = null;
                }
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
            System.err.println("usage: java -jar litpath-neo4j.jar --port P --data-dir DIR "
                + "[--auth none | --password SECRET] [--page-cache 128m]");
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
            service = new DatabaseManagementServiceBuilder(options.dataDir())
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(options.host(), options.port()))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(options.host(), options.port()))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, options.authEnabled())
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
            if (options.authEnabled()) {
                setAdminPassword(service, options.password());
            }
            GraphDatabaseService db = service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            db.executeTransactionally("RETURN 1");
        } catch (Exception e) {
            System.err.println("litpath-neo4j: started but not usable: " + rootMessage(e));
            System.exit(3);
            return;
        }

        System.out.println("READY litpath-neo4j bolt://" + options.host() + ":" + options.port()
            + " auth=" + (options.authEnabled() ? "password" : "none") + " data=" + options.dataDir());
        System.out.flush();
        stopped.await();
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
