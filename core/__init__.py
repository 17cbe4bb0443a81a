"""The foundation every layer may import: limits on input, the user-error vocabulary and its
plain words, retry backoff and child-process handling. It imports nothing of Parley's."""
