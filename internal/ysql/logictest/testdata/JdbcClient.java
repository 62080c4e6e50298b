// The PostgreSQL JDBC driver against YSQL: compiled and run by
// TestClientCompat with host, port and database as arguments; prints "ok"
// last when every check passed (a failed check throws).

import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public class JdbcClient {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void eq(Object got, Object want, String what) {
        if (want == null ? got != null : !want.equals(got)) {
            throw new AssertionError(what + ": got " + got + ", want " + want);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/" + args[2];
        Properties props = new Properties();
        props.setProperty("user", "yugabyte");
        props.setProperty("ApplicationName", "jdbc-test");
        // Server-side prepared statements from the second execution on.
        props.setProperty("prepareThreshold", "2");
        try (Connection conn = DriverManager.getConnection(url, props)) {
            run(conn);
        }
        System.out.println("ok");
    }

    static void run(Connection conn) throws Exception {
        DatabaseMetaData md = conn.getMetaData();
        eq(md.getDatabaseProductName(), "PostgreSQL", "product name");
        check(md.getDatabaseMajorVersion() >= 15, "server major version " + md.getDatabaseMajorVersion());
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT version(), current_setting('application_name')")) {
            check(rs.next(), "version row");
            check(rs.getString(1).contains("ShaleDB"), "version(): " + rs.getString(1));
            eq(rs.getString(2), "jdbc-test", "application_name");
        }

        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) DEFAULT 0, "
                    + "opened timestamp, active boolean, note varchar(40))");
        }

        // Metadata: tables, columns, primary keys.
        try (ResultSet rs = md.getTables(null, "public", "accounts", new String[] {"TABLE"})) {
            check(rs.next(), "getTables finds accounts");
            eq(rs.getString("TABLE_NAME"), "accounts", "TABLE_NAME");
            eq(rs.getString("TABLE_SCHEM"), "public", "TABLE_SCHEM");
            eq(rs.getString("TABLE_TYPE"), "TABLE", "TABLE_TYPE");
            check(!rs.next(), "getTables: one table");
        }
        List<String> cols = new ArrayList<>();
        try (ResultSet rs = md.getColumns(null, "public", "accounts", null)) {
            while (rs.next()) {
                String name = rs.getString("COLUMN_NAME");
                cols.add(name + ":" + rs.getString("TYPE_NAME") + ":" + rs.getInt("DATA_TYPE") + ":" + rs.getInt("NULLABLE")
                        + ":" + rs.getInt("ORDINAL_POSITION"));
                if (name.equals("balance")) {
                    eq(rs.getInt("COLUMN_SIZE"), 12, "balance COLUMN_SIZE");
                    eq(rs.getInt("DECIMAL_DIGITS"), 2, "balance DECIMAL_DIGITS");
                    eq(rs.getString("COLUMN_DEF"), "0", "balance COLUMN_DEF");
                }
                if (name.equals("note")) {
                    eq(rs.getInt("COLUMN_SIZE"), 40, "note COLUMN_SIZE");
                }
            }
        }
        eq(String.join(",", cols),
                "id:int8:" + Types.BIGINT + ":0:1,owner:text:" + Types.VARCHAR + ":0:2,balance:numeric:" + Types.NUMERIC
                        + ":1:3,opened:timestamp:" + Types.TIMESTAMP + ":1:4,active:bool:" + Types.BIT + ":1:5,note:varchar:"
                        + Types.VARCHAR + ":1:6",
                "getColumns");
        try (ResultSet rs = md.getPrimaryKeys(null, "public", "accounts")) {
            check(rs.next(), "getPrimaryKeys row");
            eq(rs.getString("COLUMN_NAME"), "id", "pk column");
            eq(rs.getInt("KEY_SEQ"), 1, "pk KEY_SEQ");
            eq(rs.getString("PK_NAME"), "accounts_pkey", "PK_NAME");
            check(!rs.next(), "one pk column");
        }

        // Foreign keys as Hibernate and SQL tools read them: the driver's
        // nine-relation catalog join.
        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE transfers (id bigint PRIMARY KEY, account bigint REFERENCES accounts ON DELETE CASCADE, amount numeric)");
        }
        try (ResultSet rs = md.getImportedKeys(null, "public", "transfers")) {
            check(rs.next(), "getImportedKeys row");
            eq(rs.getString("PKTABLE_NAME"), "accounts", "PKTABLE_NAME");
            eq(rs.getString("PKCOLUMN_NAME"), "id", "PKCOLUMN_NAME");
            eq(rs.getString("FKTABLE_NAME"), "transfers", "FKTABLE_NAME");
            eq(rs.getString("FKCOLUMN_NAME"), "account", "FKCOLUMN_NAME");
            eq(rs.getInt("KEY_SEQ"), 1, "fk KEY_SEQ");
            eq(rs.getInt("DELETE_RULE"), DatabaseMetaData.importedKeyCascade, "DELETE_RULE");
            eq(rs.getString("FK_NAME"), "transfers_account_fkey", "FK_NAME");
            eq(rs.getString("PK_NAME"), "accounts_pkey", "fk PK_NAME");
            check(!rs.next(), "one imported key");
        }
        try (ResultSet rs = md.getExportedKeys(null, "public", "accounts")) {
            check(rs.next(), "getExportedKeys row");
            eq(rs.getString("FKTABLE_NAME"), "transfers", "exported FKTABLE_NAME");
            check(!rs.next(), "one exported key");
        }
        try (Statement st = conn.createStatement()) {
            st.execute("DROP TABLE transfers");
        }

        // PreparedStatement inserts, enough of them that the driver switches
        // to a named server-side statement.
        Timestamp opened = Timestamp.valueOf("2026-11-23 10:30:15.123456");
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO accounts (id, owner, balance, opened, active, note) VALUES (?, ?, ?, ?, ?, ?)")) {
            for (int i = 1; i <= 6; i++) {
                ps.setInt(1, i);
                ps.setString(2, "owner" + i);
                ps.setBigDecimal(3, new BigDecimal("100.25").multiply(BigDecimal.valueOf(i)));
                ps.setTimestamp(4, opened);
                ps.setBoolean(5, i % 2 == 0);
                if (i == 3) {
                    ps.setNull(6, Types.VARCHAR);
                } else {
                    ps.setString(6, "note " + i);
                }
                eq(ps.executeUpdate(), 1, "insert count");
            }
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT owner, balance, opened, active, note, id FROM accounts WHERE id = ?")) {
            for (int i = 1; i <= 6; i++) {
                ps.setLong(1, i);
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next(), "row " + i);
                    eq(rs.getString(1), "owner" + i, "owner");
                    eq(rs.getBigDecimal(2), new BigDecimal("100.25").multiply(BigDecimal.valueOf(i)), "balance");
                    eq(rs.getTimestamp(3), opened, "opened");
                    eq(rs.getBoolean(4), i % 2 == 0, "active");
                    eq(rs.getString(5), i == 3 ? null : "note " + i, "note");
                    eq(rs.getLong(6), (long) i, "id");
                    ResultSetMetaData rmd = rs.getMetaData();
                    eq(rmd.getColumnName(2), "balance", "column name");
                    eq(rmd.getColumnType(2), Types.NUMERIC, "column type");
                    eq(rmd.getColumnTypeName(1), "text", "column type name");
                    eq(rmd.getPrecision(2), 12, "numeric precision");
                    eq(rmd.getScale(2), 2, "numeric scale");
                    check(!rs.next(), "one row");
                }
            }
        }

        // Batch insert.
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO accounts (id, owner) VALUES (?, ?)")) {
            for (int i = 100; i < 110; i++) {
                ps.setInt(1, i);
                ps.setString(2, "batch" + i);
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            eq(counts.length, 10, "batch size");
            for (int c : counts) {
                eq(c, 1, "batch count");
            }
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*), sum(balance) FROM accounts")) {
            check(rs.next(), "count row");
            eq(rs.getLong(1), 16L, "count");
            eq(rs.getBigDecimal(2), new BigDecimal("2105.25"), "sum");
        }

        // Transactions.
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("UPDATE accounts SET balance = balance - 50 WHERE id = 1");
            st.executeUpdate("UPDATE accounts SET balance = balance + 50 WHERE id = 2");
        }
        conn.commit();
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("DELETE FROM accounts WHERE id >= 100");
        }
        conn.rollback();
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*), sum(balance) FROM accounts")) {
            check(rs.next(), "count row");
            eq(rs.getLong(1), 16L, "count after rollback");
            eq(rs.getBigDecimal(2), new BigDecimal("2105.25"), "sum after transfer");
        }
        conn.commit();
        conn.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SHOW transaction_isolation")) {
            check(rs.next(), "isolation row");
            eq(rs.getString(1), "repeatable read", "transaction_isolation");
        }
        conn.commit();
        conn.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        conn.setAutoCommit(true);

        // A duplicate key is SQLState 23505; the connection stays usable.
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO accounts (id, owner) VALUES (?, ?)")) {
            ps.setInt(1, 1);
            ps.setString(2, "dup");
            ps.executeUpdate();
            throw new AssertionError("duplicate key accepted");
        } catch (SQLException e) {
            eq(e.getSQLState(), "23505", "duplicate key SQLState");
        }
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO accounts (id, owner) VALUES (?, ?)")) {
            ps.setInt(1, 200);
            ps.setString(2, "a");
            ps.addBatch();
            ps.setInt(1, 1);
            ps.setString(2, "dup");
            ps.addBatch();
            ps.executeBatch();
            throw new AssertionError("duplicate key in a batch accepted");
        } catch (BatchUpdateException e) {
            eq(e.getSQLState(), "23505", "batch duplicate key SQLState");
        }
        try (Statement st = conn.createStatement()) {
            st.executeQuery("SELEC 1");
            throw new AssertionError("syntax error accepted");
        } catch (SQLException e) {
            eq(e.getSQLState(), "42601", "syntax error SQLState");
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM accounts")) {
            check(rs.next(), "count row");
            // The batch is one implicit transaction (its Executes share one Sync),
            // so its first row went with the duplicate, as in PostgreSQL.
            eq(rs.getLong(1), 16L, "count after errors");
        }
    }
}
