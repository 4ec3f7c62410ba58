package org.litpath.local.mongo;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.ClientRequest;
import de.bwaldvogel.mongo.wire.message.MessageHeader;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * MongoDB's {@code compact} command, which mongo-java-server does not have, for the H2 store: after
 * {@code litpath builds prune} deletes what no build needs any more, the freed space is given back.
 *
 * <p>H2's MVStore only appends: a document deleted or replaced leaves its old pages in the file
 * until the store is compacted. {@code {compact: <collection>}} (authenticated, OP_MSG; it sits
 * behind {@link AuthenticationHandler}) frees the dead chunks, has MVStore move the live pages to
 * the front and shrink the file ({@link MVStore#compactFile}), and replies with the file's size
 * before and after, and {@code bytesFreed}. The whole store is compacted whichever collection is named; the in-memory
 * store has nothing to give back and replies {@code bytesFreed: 0}.
 */
final class CompactionHandler extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(CompactionHandler.class);
    /** At most this long per compaction (MVStore's own limit); a rerun goes on from there. */
    static final int MAX_COMPACT_MS = 600_000;
    static final String SCRATCH_MAP = "litpath.compaction";
    private static final int COMMITS = 3;

    private final MVStore store;
    private final AtomicInteger replyIds = new AtomicInteger(1 << 30);

    CompactionHandler(MVStore store) {
        this.store = store;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof MongoMessage message && isCompact(message.getDocument())) {
            reply(ctx, message, compact());
            return;
        }
        ctx.fireChannelRead(msg);
    }

    private static boolean isCompact(Document document) {
        return document != null && !document.isEmpty()
            && "compact".equals(document.keySet().iterator().next().toLowerCase(Locale.ROOT));
    }

    private Document compact() {
        Document out = new Document();
        if (store.getFileStore() == null) {
            out.put("bytesFreed", 0L);
            out.put("ok", 1.0);
            return out;
        }
        long before = store.getFileStore().size();
        long started = System.nanoTime();
        synchronized (this) { // one compaction at a time
            // MVStore keeps the pages of recent versions for readers still on them (45 s by
            // default) and frees a chunk only some commits after its last live page went: with no
            // retention and a few commits the dead chunks are free, compactFile moves the live ones
            // to the front, and the commits after it truncate the file.
            int retention = store.getRetentionTime();
            int versions = (int) store.getVersionsToKeep();
            store.setRetentionTime(0);
            store.setVersionsToKeep(0);
            try {
                commitSome();
                store.compact(100, Integer.MAX_VALUE);
                store.compactFile(MAX_COMPACT_MS);
                commitSome();
                store.sync();
            } finally {
                store.setVersionsToKeep(versions);
                store.setRetentionTime(retention);
            }
        }
        long after = store.getFileStore().size();
        log.info("compacted the store: {} -> {} bytes in {} ms", before, after, (System.nanoTime() - started) / 1_000_000);
        out.put("bytesBefore", before);
        out.put("bytesAfter", after);
        out.put("bytesFreed", Math.max(0L, before - after));
        out.put("ok", 1.0);
        return out;
    }

    /** A few commits with a change each (a commit without one writes nothing): a counter in a map
     * of its own, outside the maps mongo-java-server reads (theirs start with "databases."). */
    private void commitSome() {
        MVMap<String, Long> scratch = store.openMap(SCRATCH_MAP);
        for (int i = 0; i < COMMITS; i++) {
            scratch.merge("commits", 1L, Long::sum);
            store.commit();
        }
    }

    private void reply(ChannelHandlerContext ctx, ClientRequest request, Document body) {
        MessageHeader header = new MessageHeader(replyIds.incrementAndGet(), request.getHeader().getRequestID());
        ctx.writeAndFlush(new MongoMessage(ctx.channel(), header, body));
    }
}
