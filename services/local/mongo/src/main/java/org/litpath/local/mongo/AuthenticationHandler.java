package org.litpath.local.mongo;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.BsonConstants;
import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import de.bwaldvogel.mongo.wire.message.ClientRequest;
import de.bwaldvogel.mongo.wire.message.MessageHeader;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import de.bwaldvogel.mongo.wire.message.MongoQuery;
import de.bwaldvogel.mongo.wire.message.MongoReply;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;

/**
 * Authentication in front of mongo-java-server, which has none of its own: one per connection,
 * between the wire decoder and the database handler.
 *
 * <p>Nothing reaches the database before the connection has completed a SCRAM-SHA-256 exchange
 * ({@code saslStart}, {@code saslContinue}). The handshake a driver needs first
 * ({@code hello}/{@code isMaster}, {@code ping}, {@code endSessions}) is answered here, never
 * forwarded: in mongo-java-server even {@code hello} on a new database name creates that
 * database. Every other request is answered with MongoDB's error 13 (Unauthorized).
 *
 * <p>The command is read as the server reads it: the first key of the command document; for a
 * legacy OP_QUERY on {@code <db>.$cmd}, the first key of the {@code $query} document when
 * {@code $query} is that first key. A {@code $query} key anywhere else is refused, for every
 * client: it is how a request once passed for a {@code ping} here while the server ran the
 * command in front of it. After authentication OP_QUERY is still only good for the handshake
 * (as on MongoDB 5.1 and later): drivers send everything else as OP_MSG, and OP_QUERY is where the
 * server's reading of a command has its special cases.
 */
final class AuthenticationHandler extends ChannelInboundHandlerAdapter {

    private static final int CONVERSATION_ID = 1;
    private static final String QUERY_WRAPPER = "$query";

    private final ScramSha256 scram;
    private final MongoVersion version;
    private final ThrottledLog refusals;
    private final AtomicInteger replyIds = new AtomicInteger();
    private ScramSha256.Conversation conversation;
    private boolean authenticated;

    AuthenticationHandler(ScramSha256 scram, MongoVersion version, ThrottledLog refusals) {
        this.scram = scram;
        this.version = version;
        this.refusals = refusals;
    }

    /** What a request asks for, as the server would read it. */
    private record Command(String name, Document document, boolean legacy, String problem) {

        static Command of(ClientRequest request) {
            if (request instanceof MongoMessage message) {
                Document document = message.getDocument();
                if (document == null || document.isEmpty()) {
                    return new Command(null, document, false, "an empty command document");
                }
                if (document.containsKey(QUERY_WRAPPER)) {
                    return new Command(null, document, false, "an OP_MSG command with a " + QUERY_WRAPPER + " key");
                }
                return new Command(firstKey(document), document, false, null);
            }
            if (request instanceof MongoQuery query && "$cmd".equals(query.getCollectionName())) {
                Document outer = query.getQuery();
                if (outer == null || outer.isEmpty()) {
                    return new Command(null, outer, true, "an empty command document");
                }
                String first = firstKey(outer);
                if (!QUERY_WRAPPER.equals(first)) {
                    if (outer.containsKey(QUERY_WRAPPER)) {
                        return new Command(null, outer, true,
                            "a command with " + QUERY_WRAPPER + " after its first key (" + first + ")");
                    }
                    return new Command(first, outer, true, null);
                }
                if (!(outer.get(QUERY_WRAPPER) instanceof Document inner) || inner.isEmpty()) {
                    return new Command(null, outer, true, "a " + QUERY_WRAPPER + " that is not a command document");
                }
                return new Command(firstKey(inner), inner, true, null);
            }
            return new Command(null, null, false, "an unsupported kind of request");
        }

        private static String firstKey(Document document) {
            return document.keySet().iterator().next();
        }

        /** The name in lower case, as the server compares most command names (equalsIgnoreCase). */
        String key() {
            return name == null ? "" : name.toLowerCase(Locale.ROOT);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ClientRequest request)) {
            // The decoder gives nothing else; whatever it is, it does not pass unchecked.
            ReferenceCountUtil.release(msg);
            ctx.close();
            return;
        }
        if (request instanceof MongoQuery query && !"$cmd".equals(query.getCollectionName())) {
            // A legacy query on a collection (or on $cmd.sys.*): never a handshake, never forwarded.
            String where = query.getFullCollectionName();
            reply(ctx, request, authenticated
                ? error(352, "UnsupportedOpQueryCommand", "OP_QUERY on " + where + " is not supported; send find as OP_MSG")
                : error(13, "Unauthorized", "a query on " + where + " requires authentication"));
            return;
        }
        Command command = Command.of(request);
        if (command.problem() != null) {
            reply(ctx, request, authenticated
                ? error(2, "BadValue", "refused " + command.problem())
                : unauthorized(command));
            return;
        }
        switch (command.key()) {
            case "saslstart" -> reply(ctx, request, saslStart(ctx, command.document()));
            case "saslcontinue" -> reply(ctx, request, saslContinue(ctx, command.document()));
            case "hello", "ismaster" -> reply(ctx, request, hello(command));
            case "ping", "endsessions" -> reply(ctx, request, ok());
            default -> {
                if (!authenticated) {
                    reply(ctx, request, unauthorized(command));
                } else if (command.legacy()) {
                    reply(ctx, request, error(352, "UnsupportedOpQueryCommand",
                        "Unsupported OP_QUERY command: " + command.name() + "; send it as OP_MSG"));
                } else {
                    ctx.fireChannelRead(msg);
                }
            }
        }
    }

    /**
     * The reply to {@code hello}/{@code isMaster}, made here: what a driver needs to connect
     * (a writable standalone, its wire version and size limits, as mongo-java-server 1.47.0's own
     * {@code isMaster} reply has them) and the SCRAM mechanism when it asks which it may use.
     */
    private Document hello(Command command) {
        Document out = new Document();
        boolean modern = "hello".equals(command.key());
        out.put(modern ? "isWritablePrimary" : "ismaster", Boolean.TRUE);
        if (!modern && command.document().containsKey("helloOk")) {
            out.put("helloOk", Boolean.TRUE); // hello is answered here too, so a driver may switch to it
        }
        out.put("maxBsonObjectSize", BsonConstants.MAX_BSON_OBJECT_SIZE);
        out.put("maxMessageSizeBytes", MongoWireProtocolHandler.MAX_MESSAGE_SIZE_BYTES);
        out.put("maxWriteBatchSize", MongoWireProtocolHandler.MAX_WRITE_BATCH_SIZE);
        out.put("localTime", Instant.now());
        out.put("minWireVersion", 0);
        out.put("maxWireVersion", version.getWireVersion());
        out.put("readOnly", Boolean.FALSE);
        if (command.document().containsKey("saslSupportedMechs")) {
            out.put("saslSupportedMechs", List.of(ScramSha256.MECHANISM));
        }
        out.put("ok", 1.0);
        return out;
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
        refusals.warn("authentication refused for a client on {}: {}", ctx.channel().remoteAddress(), refused.getMessage());
        return error(18, "AuthenticationFailed", refused.getMessage());
    }

    private static Document unauthorized(Command command) {
        String what = command.name() != null ? "command " + command.name() : command.problem();
        return error(13, "Unauthorized", what + " requires authentication");
    }

    private static Document step(boolean done, String payload) {
        Document out = new Document();
        out.put("conversationId", CONVERSATION_ID);
        out.put("done", done);
        out.put("payload", new BinData(payload.getBytes(StandardCharsets.UTF_8)));
        out.put("ok", 1.0);
        return out;
    }

    private static Document ok() {
        Document out = new Document();
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

    private void reply(ChannelHandlerContext ctx, ClientRequest request, Document body) {
        MessageHeader header = new MessageHeader(replyIds.incrementAndGet(), request.getHeader().getRequestID());
        if (request instanceof MongoMessage) {
            ctx.writeAndFlush(new MongoMessage(ctx.channel(), header, body));
        } else {
            ctx.writeAndFlush(new MongoReply(header, body));
        }
    }
}
