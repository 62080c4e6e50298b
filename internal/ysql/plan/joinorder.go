package plan

// Join order of a FROM list. `FROM a, b, c WHERE a.x = c.y AND c.z = b.w`
// planned in the order written joins a and b first with nothing to join
// them on: a nested loop over every pair, whose rows the next join then
// holds. Before the WHERE clause is pushed into the joins, orderFromList
// puts the items in an order where each one after the first shares an
// equality with those before it, when the written order does not, and
// projects the columns back into the written order (for SELECT * and the
// WHERE clause's column numbers). pgjdbc's DatabaseMetaData.getImportedKeys
// (Hibernate and SQL tools call it) lists nine catalog relations, several
// in such an order: it ran out of memory.

// orderFromList returns from (the FROM list's cross joins) with its items
// reordered as above for the conjuncts of cond (bound over from's
// columns), or from itself when the written order is fine.
func orderFromList(from Node, cond Expr) Node {
	items := fromItems(from)
	if len(items) < 3 || cond == nil {
		return from
	}
	// The items' column ranges in the written order.
	start := make([]int, len(items)+1)
	for i, it := range items {
		start[i+1] = start[i] + len(it.Columns())
	}
	itemOf := func(col int) int {
		for i := range items {
			if col < start[i+1] {
				return i
			}
		}
		return -1
	}
	// linked[i][j]: an equality of a column of item i and one of item j.
	linked := make([][]bool, len(items))
	for i := range linked {
		linked[i] = make([]bool, len(items))
	}
	for _, c := range conjuncts(cond, nil) {
		bo, ok := c.(*BinOp)
		if !ok || bo.Name != "=" {
			continue
		}
		l, r := itemsRead(bo.L, itemOf), itemsRead(bo.R, itemOf)
		if len(l) == 1 && len(r) == 1 && l[0] != r[0] {
			linked[l[0]][r[0]], linked[r[0]][l[0]] = true, true
		}
	}
	// Greedy: the first item, then each time the first item in written
	// order linked to one already taken (else the first left).
	order := []int{0}
	taken := make([]bool, len(items))
	taken[0] = true
	for len(order) < len(items) {
		next := -1
		for i := range items {
			if taken[i] {
				continue
			}
			if next < 0 {
				next = i // nothing linked: the written order
			}
			if linkedTo(linked[i], order) {
				next = i
				break
			}
		}
		order = append(order, next)
		taken[next] = true
	}
	inOrder := true
	for i, it := range order {
		inOrder = inOrder && i == it
	}
	if inOrder {
		return from
	}
	// Build the joins in the new order and put the columns back.
	var node Node
	pos := make([]int, start[len(items)]) // written column -> new column
	n := 0
	for _, it := range order {
		for c := start[it]; c < start[it+1]; c++ {
			pos[c] = n
			n++
		}
		if node == nil {
			node = items[it]
			continue
		}
		node = &Join{Kind: InnerJoin, Left: node, Right: items[it], cols: append(append([]Column(nil), node.Columns()...), items[it].Columns()...)}
	}
	cols := from.Columns()
	exprs := make([]Expr, len(cols))
	for i, c := range cols {
		exprs[i] = &ColRef{Idx: pos[i], T: c.T, Name: c.Name}
	}
	return &Project{Input: node, Exprs: exprs, cols: append([]Column(nil), cols...), fromOrder: true}
}

// fromItems returns the items of a FROM list's chain of cross joins (as
// fromList builds it) in written order; anything else (an ON join, a
// lateral join and what it runs after) is one item.
func fromItems(n Node) []Node {
	j, ok := n.(*Join)
	if !ok || j.Kind != InnerJoin || j.Cond != nil || len(j.EqLeft) > 0 {
		return []Node{n}
	}
	return append(fromItems(j.Left), j.Right)
}

// itemsRead returns the items whose columns e reads (nil when e reads
// something else: an outer column, a subquery).
func itemsRead(e Expr, itemOf func(int) int) []int {
	var out []int
	_, ok := mapColumns(e, func(c *ColRef) (Expr, bool) {
		i := itemOf(c.Idx)
		if i < 0 {
			return nil, false
		}
		for _, x := range out {
			if x == i {
				return c, true
			}
		}
		out = append(out, i)
		return c, true
	})
	if !ok {
		return nil
	}
	return out
}

func linkedTo(links []bool, order []int) bool {
	for _, o := range order {
		if links[o] {
			return true
		}
	}
	return false
}
