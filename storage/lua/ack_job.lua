-- A job done: acknowledge its entry (A.entry) in the group (A.group) and delete it from the
-- stream, at once.
redis.call('XACK', K.stream, A.group, A.entry)
redis.call('XDEL', K.stream, A.entry)
