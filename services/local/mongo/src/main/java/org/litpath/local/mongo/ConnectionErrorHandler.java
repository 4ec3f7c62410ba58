package org.litpath.local.mongo;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * The last handler of a connection: an error that reaches it (a message the decoder cannot read,
 * an unknown opcode, a reset connection) closes the connection. Stands in for mongo-java-server's
 * {@code MongoExceptionHandler}, which logs a stack trace per error: any local user could send
 * garbage in a loop and grow the log without bound. Here it is one line, through a
 * {@link ThrottledLog}.
 */
final class ConnectionErrorHandler extends ChannelInboundHandlerAdapter {

    private final ThrottledLog errors;

    ConnectionErrorHandler(ThrottledLog errors) {
        this.errors = errors;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        errors.warn("closing the connection of a client on {}: {}: {}", ctx.channel().remoteAddress(),
            cause.getClass().getSimpleName(), cause.getMessage());
        ctx.channel().close();
    }
}
