package logictest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClientCompat runs real PostgreSQL clients against one 3-node
// cluster: psql's describe commands, psycopg2, SQLAlchemy's reflection and
// ORM, Django's migrations and ORM, and the PostgreSQL JDBC driver (each a script or program under
// testdata), and yb_servers().
func TestClientCompat(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	newDB := func(t *testing.T, name string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("psql", func(t *testing.T) {
		newDB(t, "psqldb")
		testPsqlDescribe(t, addrs[1], "psqldb")
		testPsqlForeignKeys(t, addrs[1], "psqldb")
	})
	t.Run("psycopg2", func(t *testing.T) {
		py := pythonWith(t, "psycopg2")
		newDB(t, "pydb")
		host, port, _ := net.SplitHostPort(addrs[2])
		runClient(t, py, "testdata/psycopg2_client.py", host, port, "pydb")
	})
	t.Run("sqlalchemy", func(t *testing.T) {
		py := pythonWith(t, "sqlalchemy")
		newDB(t, "sadb")
		host, port, _ := net.SplitHostPort(addrs[1])
		runClient(t, py, "testdata/sqlalchemy_client.py", host, port, "sadb")
	})
	t.Run("django", func(t *testing.T) {
		py := pythonWith(t, "django")
		newDB(t, "djdb")
		host, port, _ := net.SplitHostPort(addrs[2])
		runClient(t, py, "testdata/django_client.py", host, port, "djdb")
	})
	t.Run("yb_servers", func(t *testing.T) {
		// Every node reports its YSQL address and open connections in its
		// heartbeats; wait until the master has all three with the
		// connections open now: admin's on node 0, three on node 1.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for range 3 {
			conn := connect(t, addrs[1], "yugabyte")
			defer conn.Close(ctx)
		}
		want := []string{addrs[0] + "=1", addrs[1] + "=3", addrs[2] + "=0"}
		sort.Strings(want)
		var got []string
		for {
			got = got[:0]
			rows, err := admin.Query(ctx, `SELECT host, port, num_connections, node_type, public_ip, uuid FROM yb_servers()`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var host, nodeType, publicIP, uuid string
				var port int64
				var conns int32
				if err := rows.Scan(&host, &port, &conns, &nodeType, &publicIP, &uuid); err != nil {
					t.Fatal(err)
				}
				if nodeType != "primary" || publicIP != host || uuid == "" {
					t.Fatalf("yb_servers row: %s %d %d %s %s %s", host, port, conns, nodeType, publicIP, uuid)
				}
				got = append(got, fmt.Sprintf("%s=%d", net.JoinHostPort(host, strconv.FormatInt(port, 10)), conns))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			sort.Strings(got)
			if strings.Join(got, ",") == strings.Join(want, ",") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("yb_servers(): %v, want %v", got, want)
			}
			time.Sleep(50 * time.Millisecond) // poll until the heartbeats arrived
		}
		// The columns YugabyteDB's drivers read.
		rows, err := admin.Query(ctx, `SELECT * FROM yb_servers()`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		rows.Close()
		if strings.Join(names, ",") != "host,port,num_connections,node_type,cloud,region,zone,public_ip,uuid" {
			t.Fatalf("yb_servers() columns: %v", names)
		}
	})
	t.Run("jdbc", func(t *testing.T) {
		const jar = "/usr/share/java/postgresql.jar"
		if _, err := os.Stat(jar); err != nil {
			t.Fatalf("%s: `make deps` installs libpostgresql-jdbc-java", jar)
		}
		javac, err := exec.LookPath("javac")
		if err != nil {
			t.Fatal("javac not found: `make deps` installs a JDK")
		}
		java, err := exec.LookPath("java")
		if err != nil {
			t.Fatal("java not found: `make deps` installs a JDK")
		}
		dir := t.TempDir()
		if out, err := exec.Command(javac, "-d", dir, "-cp", jar, "testdata/JdbcClient.java").CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		newDB(t, "jdbcdb")
		host, port, _ := net.SplitHostPort(addrs[0])
		runClient(t, java, "-cp", dir+string(os.PathListSeparator)+jar, "JdbcClient", host, port, "jdbcdb")
	})
}

// pythonWith returns a Python 3 that imports module: python3 on PATH, or
// the system's (where Debian's python3-* packages go) when PATH has
// another.
func pythonWith(t *testing.T, module string) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import "+module).Run() == nil {
			return path
		}
	}
	t.Fatalf("no python3 imports %s: `make deps` installs python3-%s", module, module)
	return ""
}

// runClient runs a client program; its last line of output must be "ok".
func runClient(t *testing.T, prog string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || lines[len(lines)-1] != "ok" {
		t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
}

// psqlRun runs psql -X with the commands (each a -c) and returns its
// output; a failure or anything on stderr fails the test.
func psqlRun(t *testing.T, addr, db string, cmds ...string) string {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found: `make deps` installs postgresql-client")
	}
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-X", "-h", host, "-p", port, "-U", "yugabyte", "-d", db, "-v", "ON_ERROR_STOP=1"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("psql %q: %v\n%s%s", cmds, err, out, stderr.String())
	}
	return string(out)
}

// testPsqlDescribe checks psql 15's describe commands line by line: the
// output is PostgreSQL's except where YugabyteDB's differs (indexes are
// lsm with the key's HASH/ASC/DESC layout).
func testPsqlDescribe(t *testing.T, addr, db string) {
	psqlRun(t, addr, db,
		`CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL DEFAULT 'x', n numeric(10,2) CHECK (n > 0), s serial, ts timestamptz DEFAULT now())`,
		`CREATE TABLE r (a bigint, b varchar(20) DEFAULT 'hi', PRIMARY KEY (a HASH, b DESC))`,
		`CREATE SCHEMA s1`,
		`CREATE TABLE s1.hidden (id int PRIMARY KEY)`)
	checkPsql(t, addr, db, []psqlCase{
		{`\d t`, `
                                    Table "public.t"
 Column |           Type           | Collation | Nullable |           Default            
--------+--------------------------+-----------+----------+------------------------------
 k      | integer                  |           | not null | 
 v      | text                     |           | not null | 'x'::text
 n      | numeric(10,2)            |           |          | 
 s      | integer                  |           | not null | nextval('t_s_seq'::regclass)
 ts     | timestamp with time zone |           |          | now()
Indexes:
    "t_pkey" PRIMARY KEY, lsm (k HASH)
Check constraints:
    "t_n_check" CHECK (n > 0::numeric)
`},
		{`\d+ t`, `
                                                               Table "public.t"
 Column |           Type           | Collation | Nullable |           Default            | Storage  | Compression | Stats target | Description 
--------+--------------------------+-----------+----------+------------------------------+----------+-------------+--------------+-------------
 k      | integer                  |           | not null |                              | plain    |             |              | 
 v      | text                     |           | not null | 'x'::text                    | extended |             |              | 
 n      | numeric(10,2)            |           |          |                              | main     |             |              | 
 s      | integer                  |           | not null | nextval('t_s_seq'::regclass) | plain    |             |              | 
 ts     | timestamp with time zone |           |          | now()                        | plain    |             |              | 
Indexes:
    "t_pkey" PRIMARY KEY, lsm (k HASH)
Check constraints:
    "t_n_check" CHECK (n > 0::numeric)
Access method: heap
`},
		{`\d r`, `
                                Table "public.r"
 Column |         Type          | Collation | Nullable |         Default         
--------+-----------------------+-----------+----------+-------------------------
 a      | bigint                |           | not null | 
 b      | character varying(20) |           | not null | 'hi'::character varying
Indexes:
    "r_pkey" PRIMARY KEY, lsm (a HASH, b DESC)
`},
		{`\dt`, `
        List of relations
 Schema | Name | Type  |  Owner   
--------+------+-------+----------
 public | r    | table | yugabyte
 public | t    | table | yugabyte
(2 rows)
`},
		{`\d`, `
           List of relations
 Schema |  Name   |   Type   |  Owner   
--------+---------+----------+----------
 public | r       | table    | yugabyte
 public | t       | table    | yugabyte
 public | t_s_seq | sequence | yugabyte
(3 rows)
`},
		{`\di`, `
             List of relations
 Schema |  Name  | Type  |  Owner   | Table 
--------+--------+-------+----------+-------
 public | r_pkey | index | yugabyte | r
 public | t_pkey | index | yugabyte | t
(2 rows)
`},
		{`\dt s1.*`, `
         List of relations
 Schema |  Name  | Type  |  Owner   
--------+--------+-------+----------
 s1     | hidden | table | yugabyte
(1 row)
`},
		{`\dn`, `
  List of schemas
  Name  |  Owner   
--------+----------
 public | yugabyte
 s1     | yugabyte
(2 rows)
`},
		{`\d t_pkey`, `
        Index "public.t_pkey"
 Column |  Type   | Key? | Definition 
--------+---------+------+------------
 k      | integer | yes  | k
primary key, lsm, for table "public.t"
`},
		{`\d t_s_seq`, `
                      Sequence "public.t_s_seq"
  Type   | Start | Minimum |  Maximum   | Increment | Cycles? | Cache 
---------+-------+---------+------------+-----------+---------+-------
 integer |     1 |       1 | 2147483647 |         1 | no      |     1
Owned by: public.t.s
`},
		{`\df`, `
                       List of functions
 Schema | Name | Result data type | Argument data types | Type 
--------+------+------------------+---------------------+------
(0 rows)
`},
	})
	// A view: \dv lists it, \d+ shows its columns and its stored query
	// (PostgreSQL prints the analysed query, one column a line; ours is
	// the stored text, names qualified).
	psqlRun(t, addr, db, `CREATE VIEW tv AS SELECT k, v FROM t WHERE n > 1`)
	checkPsql(t, addr, db, []psqlCase{
		{`\dv`, `
        List of relations
 Schema | Name | Type |  Owner   
--------+------+------+----------
 public | tv   | view | yugabyte
(1 row)
`},
		{`\d+ tv`, `
                              View "public.tv"
 Column |  Type   | Collation | Nullable | Default | Storage  | Description 
--------+---------+-----------+----------+---------+----------+-------------
 k      | integer |           |          |         | plain    | 
 v      | text    |           |          |         | extended | 
View definition:
 SELECT k, v FROM public.t WHERE n > 1;
`},
	})
	psqlRun(t, addr, db, `DROP VIEW tv`)
	// \l lists every database; the columns and this one's row.
	l := psqlRun(t, addr, db, `\l`)
	for _, want := range []string{
		"   Name   |  Owner   | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges ",
		" " + db + "   | yugabyte | UTF8     | C       | C     |            | libc            | ",
		" yugabyte | yugabyte | UTF8     | C       | C     |            | libc            | ",
	} {
		if !strings.Contains(l, want+"\n") {
			t.Errorf(`psql \l: no line %q in:\n%s`, want, l)
		}
	}
	// \x: expanded rows.
	got := psqlRun(t, addr, db, `INSERT INTO t (k, v, n) VALUES (1, 'a', 2.5)`, `\x`, `SELECT k, v, n, s FROM t`)
	if want := "INSERT 0 1\nExpanded display is on.\n-[ RECORD 1 ]\nk | 1\nv | a\nn | 2.50\ns | 1\n\n"; got != want {
		t.Errorf("psql \\x:\n%q\nwant\n%q", got, want)
	}
}

// testPsqlForeignKeys checks \d of a table with foreign keys and of the
// table they reference: PostgreSQL 15's output but for the lsm indexes.
func testPsqlForeignKeys(t *testing.T, addr, db string) {
	psqlRun(t, addr, db,
		`CREATE TABLE fp (k int PRIMARY KEY, u text UNIQUE)`,
		`CREATE TABLE fc (id int PRIMARY KEY, p int REFERENCES fp ON DELETE CASCADE, pu text REFERENCES fp (u))`)
	checkPsql(t, addr, db, []psqlCase{
		{`\d fc`, `
                 Table "public.fc"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 id     | integer |           | not null | 
 p      | integer |           |          | 
 pu     | text    |           |          | 
Indexes:
    "fc_pkey" PRIMARY KEY, lsm (id HASH)
Foreign-key constraints:
    "fc_p_fkey" FOREIGN KEY (p) REFERENCES fp(k) ON DELETE CASCADE
    "fc_pu_fkey" FOREIGN KEY (pu) REFERENCES fp(u)
`},
		{`\d fp`, `
                 Table "public.fp"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 k      | integer |           | not null | 
 u      | text    |           |          | 
Indexes:
    "fp_pkey" PRIMARY KEY, lsm (k HASH)
    "fp_u_key" UNIQUE CONSTRAINT, lsm (u HASH)
Referenced by:
    TABLE "fc" CONSTRAINT "fc_p_fkey" FOREIGN KEY (p) REFERENCES fp(k) ON DELETE CASCADE
    TABLE "fc" CONSTRAINT "fc_pu_fkey" FOREIGN KEY (pu) REFERENCES fp(u)
`},
	})
	psqlRun(t, addr, db, `DROP TABLE fc, fp`)
}

// psqlCase is a psql command and its whole expected output.
type psqlCase struct{ cmd, want string }

// checkPsql runs each command and compares its output.
func checkPsql(t *testing.T, addr, db string, cases []psqlCase) {
	t.Helper()
	for _, tc := range cases {
		got := psqlRun(t, addr, db, tc.cmd)
		if strings.TrimSpace(got) != strings.TrimSpace(tc.want) {
			t.Errorf("psql %s:\n%s\nwant:\n%s", tc.cmd, got, tc.want)
		}
	}
}
