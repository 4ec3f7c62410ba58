package org.litpath.local.mongo;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import org.h2.mvstore.MVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.wire.MongoDatabaseHandler;
import de.bwaldvogel.mongo.wire.MongoWireMessageEncoder;
import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import de.bwaldvogel.mongo.wire.MongoWireReplyEncoder;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;

/**
 * mongo-java-server's wire pipeline with {@link AuthenticationHandler} in front of the database.
 *
 * <p>The same handlers, in the same order, as {@code de.bwaldvogel.mongo.MongoServer#bind}
 * builds (that class offers no way to add one), plus the authentication step, MongoDB's
 * {@code compact} command for the H2 store ({@link CompactionHandler}), and with
 * {@link ConnectionErrorHandler} for the library's exception handler. What clients without the
 * password can make it log goes through a {@link ThrottledLog}: at most {@link #LOG_BURST} lines
 * of each kind per {@link #LOG_PERIOD_S} seconds, then a count.
 */
final class WireServer {

    static final int LOG_BURST = 10;
    static final long LOG_PERIOD_S = 60;
    private static final Logger log = LoggerFactory.getLogger(WireServer.class);

    private final MongoBackend backend;
    private final MVStore store;
    private final ScramSha256 scram;
    private final MongoVersion version;
    private final ThrottledLog refusals = new ThrottledLog(log, "refused authentications", LOG_BURST);
    private final ThrottledLog errors = new ThrottledLog(log, "connection errors", LOG_BURST);
    private EventLoopGroup acceptors;
    private EventLoopGroup workers;
    private ChannelGroup clients;
    private Channel listener;

    WireServer(MongoBackend backend, MVStore store, ScramSha256 scram, MongoVersion version) {
        this.backend = backend;
        this.store = store;
        this.scram = scram;
        this.version = version;
    }

    InetSocketAddress bind(String host, int port) {
        acceptors = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        workers = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        clients = new DefaultChannelGroup("litpath-mongo-clients", workers.next());
        ServerBootstrap bootstrap = new ServerBootstrap()
            .group(acceptors, workers)
            .channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, 100)
            .childOption(ChannelOption.TCP_NODELAY, Boolean.TRUE)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel channel) {
                    channel.pipeline().addLast(
                        new MongoWireReplyEncoder(),
                        new MongoWireMessageEncoder(),
                        new MongoWireProtocolHandler(),
                        new AuthenticationHandler(scram, version, refusals),
                        new CompactionHandler(store),
                        new MongoDatabaseHandler(backend, clients),
                        new ConnectionErrorHandler(errors));
                }
            });
        try {
            listener = bootstrap.bind(host, port).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            shutdown();
            throw e;
        }
        acceptors.scheduleAtFixedRate(this::endLogPeriod, LOG_PERIOD_S, LOG_PERIOD_S, TimeUnit.SECONDS);
        return (InetSocketAddress) listener.localAddress();
    }

    private void endLogPeriod() {
        refusals.endPeriod();
        errors.endPeriod();
    }

    /** Stop listening, close every client, stop the event loops, then close the store. */
    void shutdown() {
        if (listener != null) {
            listener.close().syncUninterruptibly();
            listener = null;
        }
        if (clients != null) {
            clients.close().syncUninterruptibly();
        }
        endLogPeriod(); // the counts of the unfinished period
        for (EventLoopGroup group : new EventLoopGroup[] {acceptors, workers}) {
            if (group != null) {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
        backend.close();
    }
}
