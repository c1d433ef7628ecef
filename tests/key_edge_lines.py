"""Lines at the edges of keying a record by its message id: where Spark's plain reading of the key
and the checkers' full reading of the line may part (spacing, a key given twice, a key not at its
path, a Kafka value held as text, escapes, non-ASCII, empty or numeric values, a key's name inside
another key, lines that are not JSON or not UTF-8). The core's audit-parity tests and REMP's
one-pass audit tests both read them.
"""

EDGE_LINES = [
    b'{"kind":"Finalized","message_id":"AbC1","timestamp":1}',  # plain, folded
    b'{"kind":"Finalized","message_id": "abc2"}',  # spaced: parsed
    b'{"message_id":"x1","message_id":"x2"}',  # given twice: parsed (the last counts)
    b'{"meta":{"message_id":"n1"}}',  # not at a path: placed by its value, named by no key
    b'{"value":{"message_id":"Kv"}}',  # a Kafka record's value
    b'{"value":"{\\"message_id\\":\\"kt\\"}"}',  # a value held as text: parsed
    b'{"message_id":"a\\u0062c"}',  # an escape: parsed
    b'{"message_id":"\xc3\x84b"}',  # not ASCII: parsed
    b'{"message_id":""}',  # empty: parsed
    b'{"message_id":17}',  # a number: parsed
    b'{"a\\"message_id":"q1"}',  # the name inside another key
    b'not json "message_id":"nj"',
    b'\xff{"message_id":"bad-utf8"}',
    b'{"message_id":"sp ace-#!~[]"}',
]
