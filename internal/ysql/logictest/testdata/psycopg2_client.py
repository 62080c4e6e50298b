"""psycopg2 against YSQL: run by TestClientCompat with host, port and
database as arguments; prints "ok" last when every check passed (an
assertion or error exits non-zero with a traceback)."""

import datetime
import decimal
import json
import sys
import uuid

import psycopg2
import psycopg2.errors
import psycopg2.extras

host, port, dbname = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = psycopg2.connect(host=host, port=port, dbname=dbname, user="yugabyte")
psycopg2.extras.register_uuid()

# Connection facts.
assert conn.server_version >= 150000, conn.server_version
cur = conn.cursor()
cur.execute("SELECT version()")
assert "ShaleDB" in cur.fetchone()[0]
conn.rollback()

# DDL inside the transaction psycopg2 opens runs and commits on its own
# (DDL is not transactional here): the table stays after a rollback.
cur.execute("CREATE TABLE ddl_in_block (id int PRIMARY KEY)")
conn.rollback()
cur.execute("SELECT count(*) FROM ddl_in_block")
assert cur.fetchone()[0] == 0
conn.rollback()
conn.autocommit = True
cur.execute(
    """CREATE TABLE items (
         id int PRIMARY KEY, name text, price float8, amount numeric(12,3),
         ok boolean, day date, at timestamp, atz timestamptz, data bytea,
         u uuid, doc jsonb)"""
)
conn.autocommit = False

# Parameters of every common Python type, through %s.
day = datetime.date(2026, 11, 23)
at = datetime.datetime(2026, 11, 23, 10, 30, 15, 123456)
atz = datetime.datetime(2026, 11, 23, 10, 30, 15, tzinfo=datetime.timezone.utc)
u = uuid.UUID("12345678-1234-5678-1234-567812345678")
row1 = (1, "it's \"quoted\"", 1.5, decimal.Decimal("12.345"), True, day, at, atz,
        psycopg2.Binary(b"\x00\x01\xff"), u, json.dumps({"a": [1, 2]}))
cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", row1)
cur.execute("INSERT INTO items (id, name, price, amount, ok) VALUES (%s, %s, %s, %s, %s)",
            (2, None, None, None, False))
cur.executemany("INSERT INTO items (id, name) VALUES (%(id)s, %(name)s)",
                [{"id": i, "name": "n%d" % i} for i in range(10, 20)])
assert cur.rowcount == 10, cur.rowcount  # the sum over the statements
conn.commit()

# Types come back as the Python types they went in as.
cur.execute("SELECT id, name, price, amount, ok, day, at, atz, data, u, doc FROM items WHERE id = %s", (1,))
got = cur.fetchone()
assert got[0] == 1 and isinstance(got[0], int)
assert got[1] == "it's \"quoted\"", got[1]
assert got[2] == 1.5 and isinstance(got[2], float)
assert got[3] == decimal.Decimal("12.345") and isinstance(got[3], decimal.Decimal), got[3]
assert got[4] is True
assert got[5] == day, got[5]
assert got[6] == at, got[6]
assert got[7] == atz, got[7]
assert bytes(got[8]) == b"\x00\x01\xff", got[8]
assert got[9] == u, got[9]
assert got[10] == {"a": [1, 2]}, got[10]
names = [d.name for d in cur.description]
assert names == ["id", "name", "price", "amount", "ok", "day", "at", "atz", "data", "u", "doc"], names
# type_code is the column's type OID.
assert [d.type_code for d in cur.description[:5]] == [23, 25, 701, 1700, 16], cur.description
cur.execute("SELECT name, price, amount, ok FROM items WHERE id = %s", (2,))
assert cur.fetchone() == (None, None, None, False)
cur.execute("SELECT count(*) FROM items WHERE id >= %s AND id < %s", (10, 20))
assert cur.fetchone()[0] == 10
cur.execute("SELECT %s::text, %s::int + 1, %s", ("x", 41, None))
assert cur.fetchone() == ("x", 42, None)
# An empty string is not NULL.
cur.execute("SELECT %s, '', ''::bytea, NULL::text", ("",))
got = cur.fetchone()
assert got[0] == "" and got[1] == "" and bytes(got[2]) == b"" and got[3] is None, got
conn.rollback()

# Transactions: rollback undoes, commit keeps.
cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (100, "gone"))
conn.rollback()
cur.execute("SELECT count(*) FROM items WHERE id = 100")
assert cur.fetchone()[0] == 0
cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (101, "kept"))
conn.commit()
cur.execute("SELECT name FROM items WHERE id = 101")
assert cur.fetchone()[0] == "kept"
conn.rollback()

# A duplicate key is UniqueViolation (23505); the connection stays usable
# after a rollback.
try:
    cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (1, "dup"))
    raise AssertionError("duplicate key accepted")
except psycopg2.errors.UniqueViolation as e:
    assert e.pgcode == "23505", e.pgcode
    assert "duplicate key value violates unique constraint" in str(e), str(e)
# The failed transaction refuses statements until rolled back.
try:
    cur.execute("SELECT 1")
    raise AssertionError("statement ran in a failed transaction")
except psycopg2.errors.InFailedSqlTransaction as e:
    assert e.pgcode == "25P02"
conn.rollback()
cur.execute("SELECT count(*) FROM items")
assert cur.fetchone()[0] == 13
conn.rollback()

# Syntax errors are 42601.
try:
    cur.execute("SELEC 1")
    raise AssertionError("syntax error accepted")
except psycopg2.errors.SyntaxError as e:
    assert e.pgcode == "42601"
conn.rollback()

# Autocommit: every statement commits by itself.
conn.autocommit = True
cur.execute("INSERT INTO items (id, name) VALUES (200, 'auto')")
other = psycopg2.connect(host=host, port=port, dbname=dbname, user="yugabyte")
ocur = other.cursor()
ocur.execute("SELECT name FROM items WHERE id = 200")
assert ocur.fetchone()[0] == "auto"
other.close()
conn.autocommit = False

# Isolation levels and read-only transactions.
conn.set_session(isolation_level="REPEATABLE READ")
cur.execute("SHOW transaction_isolation")
assert cur.fetchone()[0] == "repeatable read"
conn.rollback()
conn.set_session(isolation_level="READ COMMITTED", readonly=False)

# The application's own BEGIN ISOLATION LEVEL, after the BEGIN psycopg2
# sends, sets the level (with a warning), as in PostgreSQL: locking a row
# another session deleted after the snapshot is then 40001 (under READ
# COMMITTED it finds no row).
other = psycopg2.connect(host=host, port=port, dbname=dbname, user="yugabyte")
other.autocommit = True
ocur = other.cursor()
ocur.execute("INSERT INTO items (id, name) VALUES (400, 'snap')")
cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
cur.execute("SHOW transaction_isolation")
assert cur.fetchone()[0] == "repeatable read"
cur.execute("SELECT count(*) FROM items WHERE id = 401")
ocur.execute("DELETE FROM items WHERE id = 400")
try:
    cur.execute("SELECT name FROM items WHERE id = 400 FOR UPDATE")
    raise AssertionError("locking a row deleted after the snapshot succeeded")
except psycopg2.errors.SerializationFailure as e:
    assert e.pgcode == "40001"
conn.rollback()
other.close()

# A server-side (named) cursor: DECLARE ... FETCH FORWARD n.
with conn.cursor(name="big") as sc:
    sc.itersize = 3
    sc.execute("SELECT id FROM items WHERE id >= 10 AND id < 20 ORDER BY id")
    ids = [r[0] for r in sc]
    assert ids == list(range(10, 20)), ids
conn.commit()

# COPY through copy_expert, both directions of what is supported.
import io
buf = io.StringIO("300\tcopied\n301\t\\N\n")
cur.copy_expert("COPY items (id, name) FROM STDIN", buf)
assert cur.rowcount == 2, cur.rowcount
buf = io.StringIO("id,name\n302,\"a, b\"\n")
cur.copy_expert("COPY items (id, name) FROM STDIN WITH (FORMAT csv, HEADER true)", buf)
conn.commit()
cur.execute("SELECT id, name FROM items WHERE id >= 300 ORDER BY id")
assert cur.fetchall() == [(300, "copied"), (301, None), (302, "a, b")]
conn.rollback()

# Catalog lookups psycopg2.extras makes.
cur.execute("SELECT pg_catalog.pg_get_serial_sequence(%s, %s)", ("items", "id"))
assert cur.fetchone()[0] is None
cur.execute("SELECT typname FROM pg_type WHERE oid = %s", (1700,))
assert cur.fetchone()[0] == "numeric"
conn.rollback()

conn.close()
print("ok")
