package org.litpath.local.mongo;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.ClientRequest;
import de.bwaldvogel.mongo.wire.message.MessageHeader;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import de.bwaldvogel.mongo.wire.message.MongoQuery;
import de.bwaldvogel.mongo.wire.message.MongoReply;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;

/**
 * Authentication in front of mongo-java-server, which has none of its own: one per connection,
 * between the wire decoder and the database handler.
 *
 * <p>Until the connection has completed a SCRAM-SHA-256 exchange ({@code saslStart},
 * {@code saslContinue}) only the handshake commands pass ({@code hello}/{@code isMaster},
 * {@code ping}, {@code endSessions}); every other request is answered with MongoDB's error 13
 * (Unauthorized) and never reaches the database. A {@code hello} that asks for
 * {@code saslSupportedMechs} gets SCRAM-SHA-256 in its reply, as from a real server, so
 * drivers pick the mechanism themselves.
 */
final class AuthenticationHandler extends ChannelDuplexHandler {

    private static final Logger log = LoggerFactory.getLogger(AuthenticationHandler.class);
    private static final Set<String> HANDSHAKE = Set.of("hello", "ismaster", "ping", "endsessions");
    private static final int CONVERSATION_ID = 1;

    private final ScramSha256 scram;
    private final AtomicInteger replyIds = new AtomicInteger();
    // Request ids of hello commands whose replies must name the supported mechanisms.
    private final Set<Integer> advertiseTo = new HashSet<>();
    private ScramSha256.Conversation conversation;
    private boolean authenticated;

    AuthenticationHandler(ScramSha256 scram) {
        this.scram = scram;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ClientRequest request)) {
            ctx.fireChannelRead(msg);
            return;
        }
        Document command = commandOf(request);
        String name = command == null || command.isEmpty()
            ? null : command.keySet().iterator().next().toLowerCase(Locale.ROOT);
        if ("saslstart".equals(name)) {
            reply(ctx, request, saslStart(ctx, command));
        } else if ("saslcontinue".equals(name)) {
            reply(ctx, request, saslContinue(ctx, command));
        } else if (authenticated || (name != null && HANDSHAKE.contains(name))) {
            if (("hello".equals(name) || "ismaster".equals(name)) && command.containsKey("saslSupportedMechs")) {
                advertiseTo.add(request.getHeader().getRequestID());
            }
            ctx.fireChannelRead(msg);
        } else {
            String what = name == null ? "this request" : "command " + name;
            reply(ctx, request, error(13, "Unauthorized", what + " requires authentication"));
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!advertiseTo.isEmpty()) {
            if (msg instanceof MongoMessage message && advertiseTo.remove(message.getHeader().getResponseTo())) {
                advertise(message.getDocument());
            } else if (msg instanceof MongoReply reply && advertiseTo.remove(reply.getHeader().getResponseTo())
                && !reply.getDocuments().isEmpty()) {
                advertise(reply.getDocuments().get(0));
            }
        }
        ctx.write(msg, promise);
    }

    private static void advertise(Document hello) {
        hello.put("saslSupportedMechs", List.of(ScramSha256.MECHANISM));
    }

    private Document saslStart(ChannelHandlerContext ctx, Document command) {
        conversation = null;
        Object mechanism = command.get("mechanism");
        if (!ScramSha256.MECHANISM.equals(mechanism)) {
            return error(334, "MechanismUnavailable",
                "Received authentication for mechanism " + mechanism + " which is not enabled");
        }
        ScramSha256.Conversation started = scram.start();
        try {
            String serverFirst = started.first(payloadOf(command));
            conversation = started;
            return step(false, serverFirst);
        } catch (ScramSha256.Refused refused) {
            return refuse(ctx, refused);
        }
    }

    private Document saslContinue(ChannelHandlerContext ctx, Document command) {
        if (conversation == null) {
            return error(17, "ProtocolError", "No SASL session state found");
        }
        ScramSha256.Conversation current = conversation;
        conversation = null;
        try {
            String serverFinal = current.last(payloadOf(command));
            authenticated = true;
            return step(true, serverFinal);
        } catch (ScramSha256.Refused refused) {
            return refuse(ctx, refused);
        }
    }

    private Document refuse(ChannelHandlerContext ctx, ScramSha256.Refused refused) {
        log.warn("authentication refused for a client on {}: {}", ctx.channel().remoteAddress(), refused.getMessage());
        return error(18, "AuthenticationFailed", refused.getMessage());
    }

    private static Document step(boolean done, String payload) {
        Document out = new Document();
        out.put("conversationId", CONVERSATION_ID);
        out.put("done", done);
        out.put("payload", new BinData(payload.getBytes(StandardCharsets.UTF_8)));
        out.put("ok", 1.0);
        return out;
    }

    private static Document error(int code, String codeName, String message) {
        Document out = new Document();
        out.put("ok", 0.0);
        out.put("errmsg", message);
        out.put("code", code);
        out.put("codeName", codeName);
        return out;
    }

    private static String payloadOf(Document command) {
        Object payload = command.get("payload");
        if (payload instanceof BinData binary) {
            return new String(binary.getData(), StandardCharsets.UTF_8);
        }
        if (payload instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        return payload == null ? "" : payload.toString();
    }

    /** The command document of a request, or null when it is not a command (a legacy query). */
    private static Document commandOf(ClientRequest request) {
        if (request instanceof MongoMessage message) {
            return message.getDocument();
        }
        if (request instanceof MongoQuery query && "$cmd".equals(query.getCollectionName())) {
            Document document = query.getQuery();
            Object wrapped = document.get("$query");
            return wrapped instanceof Document inner ? inner : document;
        }
        return null;
    }

    private void reply(ChannelHandlerContext ctx, ClientRequest request, Document body) {
        MessageHeader header = new MessageHeader(replyIds.incrementAndGet(), request.getHeader().getRequestID());
        if (request instanceof MongoMessage) {
            ctx.writeAndFlush(new MongoMessage(ctx.channel(), header, body));
        } else {
            ctx.writeAndFlush(new MongoReply(header, body));
        }
    }
}
