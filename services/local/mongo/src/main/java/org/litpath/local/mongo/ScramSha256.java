package org.litpath.local.mongo;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The server side of SCRAM-SHA-256 (RFC 5802 / RFC 7677) for one user, as MongoDB speaks it
 * over {@code saslStart}/{@code saslContinue}.
 *
 * <p>Only the stored and server keys are kept (derived once from the password with PBKDF2 and a
 * random salt), so the password itself is not held after start-up. The password is used as
 * given (no SASLprep): the launcher's generated passwords are printable ASCII, for which
 * SASLprep changes nothing. Channel binding is not offered ({@code n,,} only).
 */
final class ScramSha256 {

    static final String MECHANISM = "SCRAM-SHA-256";
    // MongoDB's own default for SCRAM-SHA-256; drivers refuse fewer than 4096.
    static final int ITERATIONS = 15000;
    private static final String GS2_HEADER = "n,,";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String user;
    private final byte[] salt;
    private final byte[] storedKey;
    private final byte[] serverKey;

    ScramSha256(String user, String password) {
        if (user == null || user.isEmpty() || password == null || password.isEmpty()) {
            throw new IllegalArgumentException("a user name and a password are required");
        }
        this.user = user;
        this.salt = randomBytes(16);
        try {
            byte[] salted = pbkdf2(password, salt, ITERATIONS);
            this.storedKey = sha256(hmac(salted, "Client Key"));
            this.serverKey = hmac(salted, "Server Key");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SCRAM-SHA-256 is not available in this JVM", e);
        }
    }

    String user() {
        return user;
    }

    /** One authentication exchange: {@link #first} then {@link #last}. Not thread-safe (one per channel). */
    Conversation start() {
        return new Conversation();
    }

    /** Why an exchange was refused; the message is safe to send to the client. */
    static final class Refused extends Exception {
        Refused(String message) {
            super(message);
        }
    }

    final class Conversation {
        private String clientFirstBare;
        private String serverFirst;
        private String nonce;

        /** client-first-message -> server-first-message. */
        String first(String clientFirst) throws Refused {
            if (!clientFirst.startsWith(GS2_HEADER)) {
                throw new Refused("SCRAM: channel binding and authorization identities are not supported");
            }
            clientFirstBare = clientFirst.substring(GS2_HEADER.length());
            Map<String, String> attributes = attributes(clientFirstBare);
            String name = unescapeName(attributes.get("n"));
            String clientNonce = attributes.get("r");
            if (name == null || clientNonce == null || clientNonce.isEmpty()) {
                throw new Refused("SCRAM: malformed client-first-message");
            }
            if (!MessageDigest.isEqual(name.getBytes(StandardCharsets.UTF_8), user.getBytes(StandardCharsets.UTF_8))) {
                throw new Refused("Authentication failed.");
            }
            nonce = clientNonce + Base64.getEncoder().encodeToString(randomBytes(24));
            serverFirst = "r=" + nonce + ",s=" + Base64.getEncoder().encodeToString(salt) + ",i=" + ITERATIONS;
            return serverFirst;
        }

        /** client-final-message -> server-final-message, or Refused when the proof is wrong. */
        String last(String clientFinal) throws Refused {
            if (serverFirst == null) {
                throw new Refused("SCRAM: saslContinue before saslStart");
            }
            int proofAt = clientFinal.lastIndexOf(",p=");
            if (proofAt < 0) {
                throw new Refused("SCRAM: malformed client-final-message");
            }
            String withoutProof = clientFinal.substring(0, proofAt);
            Map<String, String> attributes = attributes(withoutProof);
            String binding = Base64.getEncoder().encodeToString(GS2_HEADER.getBytes(StandardCharsets.US_ASCII));
            if (!binding.equals(attributes.get("c")) || !nonce.equals(attributes.get("r"))) {
                throw new Refused("Authentication failed.");
            }
            byte[] proof;
            try {
                proof = Base64.getDecoder().decode(clientFinal.substring(proofAt + 3));
            } catch (IllegalArgumentException e) {
                throw new Refused("SCRAM: malformed client proof");
            }
            String authMessage = clientFirstBare + "," + serverFirst + "," + withoutProof;
            try {
                byte[] clientSignature = hmac(storedKey, authMessage);
                if (proof.length != clientSignature.length) {
                    throw new Refused("Authentication failed.");
                }
                byte[] clientKey = new byte[proof.length];
                for (int i = 0; i < proof.length; i++) {
                    clientKey[i] = (byte) (proof[i] ^ clientSignature[i]);
                }
                if (!MessageDigest.isEqual(sha256(clientKey), storedKey)) {
                    throw new Refused("Authentication failed.");
                }
                return "v=" + Base64.getEncoder().encodeToString(hmac(serverKey, authMessage));
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static Map<String, String> attributes(String message) {
        Map<String, String> out = new HashMap<>();
        for (String part : message.split(",")) {
            if (part.length() >= 2 && part.charAt(1) == '=') {
                out.putIfAbsent(part.substring(0, 1), part.substring(2));
            }
        }
        return out;
    }

    /** RFC 5802 saslname: "=2C" is ',' and "=3D" is '='. */
    private static String unescapeName(String name) {
        return name == null ? null : name.replace("=2C", ",").replace("=3D", "=");
    }

    private static byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private static byte[] pbkdf2(String password, byte[] salt, int iterations) throws GeneralSecurityException {
        PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, iterations, 256);
        try {
            return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
        } finally {
            spec.clearPassword();
        }
    }

    private static byte[] hmac(byte[] key, String message) throws GeneralSecurityException {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(message.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] sha256(byte[] data) throws GeneralSecurityException {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }
}
