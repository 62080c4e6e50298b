"""SQLAlchemy (Debian's python3-sqlalchemy, 1.4, on psycopg2) against YSQL:
run by TestClientCompat with host, port and database as arguments; prints
"ok" last when every check passed (an assertion or error exits non-zero
with a traceback). The expected values are what PostgreSQL 15 gives, but
for the index access method (lsm, as YugabyteDB's) and the deparsed text
of a CHECK."""

import decimal
import sys

import sqlalchemy as sa
from sqlalchemy import orm

host, port, dbname = sys.argv[1], int(sys.argv[2]), sys.argv[3]
engine = sa.create_engine(f"postgresql+psycopg2://yugabyte@{host}:{port}/{dbname}")

# create_all in one transaction, as a migration runs: CREATE TABLE, then
# CREATE INDEX, inside the block.
md = sa.MetaData()
sa.Table(
    "parent", md,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("code", sa.String(10), nullable=False, unique=True, comment="the code"),
    sa.Column("name", sa.Text, server_default="x"),
    sa.Column("amount", sa.Numeric(10, 2)),
    sa.Column("created", sa.DateTime(timezone=True), server_default=sa.func.now()),
    sa.CheckConstraint("amount > 0", name="amount_pos"),
    comment="parents",
)
sa.Table(
    "child", md,
    sa.Column("region", sa.Integer, primary_key=True),
    sa.Column("id", sa.BigInteger, primary_key=True),
    sa.Column("parent_id", sa.Integer, sa.ForeignKey("parent.id", ondelete="CASCADE")),
    sa.Column("note", sa.Text, index=True),
    sa.Index("child_parent_note", "parent_id", "note", unique=True),
)
with engine.begin() as conn:
    md.create_all(conn)

insp = sa.inspect(engine)
assert {"parent", "child"} <= set(insp.get_table_names()), insp.get_table_names()
assert insp.has_table("parent") and not insp.has_table("nosuch")
assert "parent_id_seq" in insp.get_sequence_names(), insp.get_sequence_names()

cols = {c["name"]: c for c in insp.get_columns("parent")}
assert list(cols) == ["id", "code", "name", "amount", "created"], list(cols)
assert str(cols["id"]["type"]) == "INTEGER" and cols["id"]["autoincrement"] and not cols["id"]["nullable"], cols["id"]
assert cols["id"]["default"] == "nextval('parent_id_seq'::regclass)", cols["id"]["default"]
assert str(cols["code"]["type"]) == "VARCHAR(10)" and cols["code"]["comment"] == "the code", cols["code"]
assert cols["name"]["default"] == "'x'::text", cols["name"]
assert str(cols["amount"]["type"]) == "NUMERIC(10, 2)" and cols["amount"]["nullable"], cols["amount"]
assert str(cols["created"]["type"]) == "TIMESTAMP" and cols["created"]["default"] == "now()", cols["created"]
assert insp.get_table_comment("parent") == {"text": "parents"}

assert insp.get_pk_constraint("parent") == {"constrained_columns": ["id"], "name": "parent_pkey"}
assert insp.get_pk_constraint("child") == {"constrained_columns": ["region", "id"], "name": "child_pkey"}, insp.get_pk_constraint("child")
assert insp.get_unique_constraints("parent") == [{"column_names": ["code"], "name": "parent_code_key"}]
checks = insp.get_check_constraints("parent")
assert [c["name"] for c in checks] == ["amount_pos"] and "amount > " in checks[0]["sqltext"], checks

fks = insp.get_foreign_keys("child")
assert fks == [{"name": "child_parent_id_fkey", "constrained_columns": ["parent_id"], "referred_schema": None,
                "referred_table": "parent", "referred_columns": ["id"], "options": {"ondelete": "CASCADE"}}], fks
idx = sorted(insp.get_indexes("child"), key=lambda i: i["name"])
assert [(i["name"], i["column_names"], i["unique"]) for i in idx] == [
    ("child_parent_note", ["parent_id", "note"], True), ("ix_child_note", ["note"], False)], idx

# Reflection of whole tables, and the ORM over them.
rmd = sa.MetaData()
rmd.reflect(bind=engine, only=["parent", "child"])
assert [t.name for t in rmd.sorted_tables] == ["parent", "child"]
assert [c.name for c in rmd.tables["child"].primary_key.columns] == ["region", "id"]

Base = orm.declarative_base(metadata=rmd)


class Parent(Base):
    __table__ = rmd.tables["parent"]
    children = orm.relationship("Child", back_populates="parent", cascade="all, delete-orphan", passive_deletes=True)


class Child(Base):
    __table__ = rmd.tables["child"]
    parent = orm.relationship("Parent", back_populates="children")


with orm.Session(engine) as session:
    p = Parent(code="A1", amount=decimal.Decimal("5.25"))
    p.children = [Child(region=1, id=10, note="a"), Child(region=2, id=20, note="b")]
    session.add(p)
    session.commit()
    assert p.id >= 1 and p.name == "x"

with orm.Session(engine) as session:
    p = session.execute(sa.select(Parent).where(Parent.code == "A1")).scalar_one()
    assert p.amount == decimal.Decimal("5.25")
    assert sorted(c.note for c in p.children) == ["a", "b"]
    p.amount += 1
    session.commit()
    try:
        session.add(Parent(code="A1", amount=1))
        session.commit()
        raise AssertionError("duplicate code accepted")
    except sa.exc.IntegrityError as e:
        assert e.orig.pgcode == "23505", e.orig.pgcode
        session.rollback()
    session.delete(session.execute(sa.select(Parent)).scalar_one())
    session.commit()
    assert session.execute(sa.select(sa.func.count()).select_from(Child)).scalar() == 0

print("ok")
