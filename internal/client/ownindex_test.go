package client

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestOwnWriteIndex: the index of a transaction's own writes (by row, and
// counts by table) always says what a walk of every write says, through
// writes and savepoint rollbacks in random order.
func TestOwnWriteIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	tx := &Txn{}
	var marks []int
	for step := 0; step < 3000; step++ {
		switch r := rng.Intn(20); {
		case r == 0:
			marks = append(marks, len(tx.writes))
		case r == 1 && len(marks) > 0:
			tx.truncateOwn(marks[len(marks)-1])
			marks = marks[:len(marks)-1]
		default:
			tx.addOwn(ownWrite{table: uint32(1 + rng.Intn(3)), rowKey: []byte(fmt.Sprintf("row%d", rng.Intn(50))), op: Op{Kind: OpPut}})
		}
		for table := uint32(1); table <= 3; table++ {
			walked := 0
			for _, w := range tx.writes {
				if w.table == table {
					walked++
				}
			}
			if tx.hasOwnTable(table) != (walked > 0) || tx.ownTables[table] != walked {
				t.Fatalf("step %d: table %d: %d writes counted, %d walked", step, table, tx.ownTables[table], walked)
			}
			for row := 0; row < 50; row++ {
				key := []byte(fmt.Sprintf("row%d", row))
				var walkedAt []int
				for i, w := range tx.writes {
					if w.table == table && bytes.Equal(w.rowKey, key) {
						walkedAt = append(walkedAt, i)
					}
				}
				if got := tx.ownOf(table, key); !slices.Equal(got, walkedAt) {
					t.Fatalf("step %d: table %d %s: index %v, walk %v", step, table, key, got, walkedAt)
				}
			}
		}
	}
}
