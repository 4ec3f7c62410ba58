package org.litpath.local.mongo;

import java.io.File;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;

/**
 * Starts a MongoDB-wire server (mongo-java-server, H2/MVStore backend) on 127.0.0.1, with
 * SCRAM-SHA-256 authentication in front of it ({@link AuthenticationHandler}).
 *
 * <p>Usage: {@code java -jar litpath-mongo.jar --port P (--data-file F | --memory) [--user U]},
 * with the password in the environment variable {@code LITPATH_MONGO_PASSWORD} (required; never
 * on the command line, where every user of the host could read it). The user defaults to
 * {@code litpath}; clients authenticate against any database (e.g. {@code authSource=admin}).
 * Prints one line starting with {@code READY} once it accepts connections, and runs until
 * it receives SIGTERM/SIGINT, when it closes the store so every committed write is on disk.
 * Exit status 2 means bad arguments, 3 means the server could not start (port taken,
 * data file locked by another process, unreadable file).
 */
public final class MongoLauncher {

    /**
     * Reported to clients in {@code isMaster}/{@code buildInfo}. Stock mongo-java-server says
     * MongoDB 5.0 with wire version 8, but PyMongo 4.20 refuses servers below wire version 9
     * (MongoDB 4.4). The server's behaviour is unchanged; only the advertised number moves.
     */
    static final MongoVersion ADVERTISED_VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(4, 4, 0);
        }

        @Override
        public int getWireVersion() {
            return 9;
        }
    };

    static final String PASSWORD_ENV = "LITPATH_MONGO_PASSWORD";

    private MongoLauncher() {
    }

    record Options(String host, int port, File dataFile, String user, String password) {
        boolean inMemory() {
            return dataFile == null;
        }
    }

    static Options parse(String[] args) {
        String host = "127.0.0.1";
        Integer port = null;
        File dataFile = null;
        boolean memory = false;
        String user = "litpath";
        String password = System.getenv(PASSWORD_ENV);
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> port = Integer.parseInt(value(args, ++i, arg));
                case "--data-file" -> dataFile = new File(value(args, ++i, arg));
                case "--memory" -> memory = true;
                case "--host" -> host = value(args, ++i, arg);
                case "--user" -> user = value(args, ++i, arg);
                default -> throw new IllegalArgumentException("unknown argument: " + arg);
            }
        }
        if (port == null || port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port <0..65535> is required");
        }
        if (memory == (dataFile != null)) {
            throw new IllegalArgumentException("give exactly one of --data-file FILE or --memory");
        }
        if (password == null || password.isEmpty()) {
            throw new IllegalArgumentException("the password must be in the environment variable " + PASSWORD_ENV);
        }
        return new Options(host, port, dataFile, user, password);
    }

    private static String value(String[] args, int index, String flag) {
        if (index >= args.length) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return args[index];
    }

    public static void main(String[] args) throws InterruptedException {
        Options options;
        try {
            options = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("litpath-mongo: " + e.getMessage());
            System.err.println("usage: " + PASSWORD_ENV + "=... java -jar litpath-mongo.jar --port P "
                + "(--data-file FILE | --memory) [--user USER]");
            System.exit(2);
            return;
        }

        H2Backend backend;
        try {
            if (options.inMemory()) {
                backend = H2Backend.inMemory();
            } else {
                File parent = options.dataFile().getAbsoluteFile().getParentFile();
                if (parent != null && !parent.isDirectory() && !parent.mkdirs()) {
                    throw new IllegalStateException("cannot create directory " + parent);
                }
                backend = new H2Backend(options.dataFile().getAbsolutePath());
            }
        } catch (Exception e) {
            System.err.println("litpath-mongo: cannot open data file " + options.dataFile() + ": " + e.getMessage());
            System.exit(3);
            return;
        }
        backend.version(ADVERTISED_VERSION);
        WireServer server = new WireServer(backend, backend.getMvStore(),
            new ScramSha256(options.user(), options.password()), ADVERTISED_VERSION);
        InetSocketAddress address;
        try {
            address = server.bind(options.host(), options.port());
        } catch (Exception e) { // Netty rethrows the checked BindException undeclared
            System.err.println("litpath-mongo: cannot listen on " + options.host() + ":" + options.port()
                + ": " + rootMessage(e));
            System.exit(3);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("litpath-mongo: shutting down");
            server.shutdown();
            System.out.println("litpath-mongo: stopped");
            System.out.flush();
            stopped.countDown();
        }, "litpath-mongo-shutdown"));

        String store = options.inMemory() ? "memory" : options.dataFile().getAbsolutePath();
        System.out.println("READY litpath-mongo listening on " + address.getHostString() + ":" + address.getPort()
            + " wire=" + ADVERTISED_VERSION.getWireVersion() + " auth=" + ScramSha256.MECHANISM
            + " user=" + options.user() + " store=" + store);
        System.out.flush();
        stopped.await();
    }

    private static String rootMessage(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}
