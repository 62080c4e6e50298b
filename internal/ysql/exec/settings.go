package exec

import (
	"maps"
	"sort"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// settingDefaults are the session settings and their defaults; names are
// lower case.
var settingDefaults = map[string]string{
	"server_version":                      ServerVersion,
	"server_version_num":                  "150000",
	"server_encoding":                     "UTF8",
	"client_encoding":                     "UTF8",
	"datestyle":                           "ISO, MDY",
	"intervalstyle":                       "postgres",
	"timezone":                            "UTC",
	"integer_datetimes":                   "on",
	"standard_conforming_strings":         "on",
	"application_name":                    "",
	"is_superuser":                        "on",
	"session_authorization":               "",
	"search_path":                         `"$user", public`,
	"extra_float_digits":                  "1",
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"client_min_messages":                 "notice",
	"default_transaction_isolation":       "read committed",
	"transaction_isolation":               "read committed",
	"default_transaction_read_only":       "off",
	"transaction_read_only":               "off",
	"default_transaction_deferrable":      "off",
	"transaction_deferrable":              "off",
	"max_identifier_length":               "63",
	"yb_enable_upsert_mode":               "off",
	"yb_enable_expression_pushdown":       "on",
	"bytea_output":                        "hex",
	"synchronous_commit":                  "on",
	"row_security":                        "on",
	"lc_messages":                         "C",
	"lc_monetary":                         "C",
	"lc_numeric":                          "C",
	"lc_time":                             "C",
	"max_connections":                     "10000",
	"default_text_search_config":          "pg_catalog.english",
	"jit":                                 "off",
	"enable_seqscan":                      "on",
	"work_mem":                            "64MB", // see defaultWorkMem
	"block_size":                          "8192",
	"max_index_keys":                      "32", // pgjdbc's getImportedKeys reads it
}

// reportedSettings are sent as ParameterStatus.
var reportedSettings = []string{"server_version", "server_encoding", "client_encoding", "datestyle", "intervalstyle",
	"timezone", "integer_datetimes", "standard_conforming_strings", "application_name", "is_superuser",
	"session_authorization", "default_transaction_read_only"}

var displayNames = map[string]string{"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}

func settingDisplayName(k string) string {
	if d, ok := displayNames[k]; ok {
		return d
	}
	return k
}

// readOnlySettings cannot be SET.
var readOnlySettings = map[string]bool{"server_version": true, "server_version_num": true, "server_encoding": true,
	"integer_datetimes": true, "max_identifier_length": true, "is_superuser": true, "max_connections": true, "block_size": true,
	"max_index_keys": true}

func defaultSettings(user string) map[string]string {
	m := make(map[string]string, len(settingDefaults))
	for k, v := range settingDefaults {
		m[k] = v
	}
	m["session_authorization"] = user
	return m
}

// set validates and stores a setting.
func (s *Session) set(name, value string) error {
	if name == "time zone" {
		name = "timezone"
	}
	if _, ok := settingDefaults[name]; !ok {
		if strings.Contains(name, ".") { // custom (extension) settings are accepted
			s.setSetting(name, value)
			return nil
		}
		return pgerror.New(pgerror.CodeUndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if readOnlySettings[name] {
		return pgerror.New(pgerror.CodeCantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	switch name {
	case "timezone":
		if strings.EqualFold(value, "local") || strings.EqualFold(value, "default") {
			value = "UTC"
		}
		if _, err := builtins.SessionZone(value); err != nil {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"TimeZone\": %q", value)
		}
	case "client_encoding":
		v := strings.ToUpper(strings.ReplaceAll(value, "-", ""))
		if v != "UTF8" && v != "UNICODE" {
			return pgerror.New(pgerror.CodeFeatureNotSupported, "client encoding %q is not supported", value).WithHint("Only UTF8 is supported.")
		}
		value = "UTF8"
	case "datestyle":
		v := strings.ToUpper(value)
		if !strings.Contains(v, "ISO") {
			return pgerror.New(pgerror.CodeFeatureNotSupported, "DateStyle %q is not supported", value).WithHint("Only ISO output is supported.")
		}
		if strings.Contains(v, "DMY") || strings.Contains(v, "EURO") || strings.Contains(v, "YMD") {
			// Dates are read month first: accepting another order would
			// read 01/02/2024 as the wrong day.
			return pgerror.New(pgerror.CodeFeatureNotSupported, "DateStyle %q is not supported", value).
				WithHint("Only ISO output with MDY input order is supported; ISO dates (2024-02-01) read the same in every order.")
		}
		value = "ISO, MDY"
	case "intervalstyle":
		if !strings.EqualFold(value, "postgres") {
			return pgerror.New(pgerror.CodeFeatureNotSupported, "IntervalStyle %q is not supported", value)
		}
		value = "postgres"
	case "extra_float_digits":
		n, err := strconv.Atoi(value)
		if err != nil || n < -15 || n > 3 {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"extra_float_digits\": %q", value)
		}
	case "work_mem":
		if _, err := parseMemory(value); err != nil {
			return err
		}
	case "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout":
		if _, err := parseDurationMs(value); err != nil {
			return err
		}
	case "transaction_isolation", "default_transaction_isolation":
		iso, err := isolation(value)
		if err != nil {
			return err
		}
		value = levelName(value, iso)
		if name == "transaction_isolation" && s.inBlock {
			if s.txn != nil {
				return pgerror.New(pgerror.CodeActiveSQLTransaction, "SET TRANSACTION ISOLATION LEVEL must be called before any query")
			}
			s.blockIso, s.blockIsoName = iso, value
		}
	case "standard_conforming_strings":
		if !isOn(value) {
			return pgerror.New(pgerror.CodeFeatureNotSupported, "standard_conforming_strings off is not supported")
		}
		value = "on"
	case "yb_enable_upsert_mode", "default_transaction_read_only", "transaction_read_only", "jit", "enable_seqscan", "row_security",
		"default_transaction_deferrable", "transaction_deferrable":
		if isOn(value) {
			value = "on"
		} else {
			value = "off"
		}
	}
	s.setSetting(name, value)
	return nil
}

func isOn(v string) bool {
	switch strings.ToLower(v) {
	case "on", "true", "yes", "1", "t", "y":
		return true
	}
	return false
}

// parseDurationMs parses a timeout setting ("0", "500", "2s", "1min").
func parseDurationMs(v string) (int64, error) {
	v = strings.TrimSpace(strings.ToLower(v))
	units := []struct {
		suffix string
		ms     int64
	}{{"ms", 1}, {"min", 60000}, {"s", 1000}, {"h", 3600000}, {"d", 86400000}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.ms
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for a timeout: %q", v)
	}
	return n * mult, nil
}

// setValue renders the value list of a SET statement as PostgreSQL does.
func setValue(args []*pg.Node) (string, error) {
	var parts []string
	for _, a := range args {
		switch {
		case a.GetAConst() != nil:
			c := a.GetAConst()
			switch {
			case c.GetSval() != nil:
				parts = append(parts, c.GetSval().GetSval())
			case c.GetIval() != nil:
				parts = append(parts, strconv.Itoa(int(c.GetIval().GetIval())))
			case c.GetFval() != nil:
				parts = append(parts, c.GetFval().GetFval())
			case c.GetBoolval() != nil:
				parts = append(parts, strconv.FormatBool(c.GetBoolval().GetBoolval()))
			}
		case a.GetString_() != nil:
			parts = append(parts, a.GetString_().GetSval())
		case a.GetInteger() != nil:
			parts = append(parts, strconv.Itoa(int(a.GetInteger().GetIval())))
		case a.GetBoolean() != nil:
			parts = append(parts, strconv.FormatBool(a.GetBoolean().GetBoolval()))
		case a.GetTypeCast() != nil:
			v, err := setValue([]*pg.Node{a.GetTypeCast().GetArg()})
			if err != nil {
				return "", err
			}
			parts = append(parts, v)
		default:
			return "", pgerror.Unsupported("this SET value")
		}
	}
	return strings.Join(parts, ", "), nil
}

// variableSet runs SET / RESET.
func (s *Session) variableSet(vs *pg.VariableSetStmt) (string, error) {
	if !s.inBlock {
		if vs.GetIsLocal() {
			s.notice("WARNING", "25P01", "SET LOCAL can only be used in transaction blocks")
			return "SET", nil
		}
		return s.setVariable(vs)
	}
	before := maps.Clone(s.settings)
	tag, err := s.setVariable(vs)
	if err == nil {
		s.noteBlockSettings(before, vs.GetIsLocal())
	}
	return tag, err
}

// blockSetting is a setting changed inside a block: its value before the
// block, and the last value a plain SET (not LOCAL) gave it there.
type blockSetting struct {
	prev    string
	session *string
}

// noteBlockSettings records the settings a SET in a block changed: a
// rolled-back block undoes them all, a committed one undoes SET LOCAL's
// (endBlockSettings).
func (s *Session) noteBlockSettings(before map[string]string, local bool) {
	for k, v := range s.settings {
		if before[k] == v {
			continue
		}
		if s.blockSettings == nil {
			s.blockSettings = map[string]*blockSetting{}
		}
		bs, ok := s.blockSettings[k]
		if !ok {
			bs = &blockSetting{prev: before[k]}
			s.blockSettings[k] = bs
		}
		if !local {
			v := v
			bs.session = &v
		}
	}
}

// endBlockSettings puts back, at the end of a block, the settings its SETs
// changed: all of them on a rollback, SET LOCAL's on a commit, as
// PostgreSQL does.
func (s *Session) endBlockSettings(commit bool) {
	for k, bs := range s.blockSettings {
		v := bs.prev
		if commit && bs.session != nil {
			v = *bs.session
		}
		if s.settings[k] != v {
			s.setSetting(k, v)
		}
	}
	s.blockSettings = nil
}

func (s *Session) setVariable(vs *pg.VariableSetStmt) (string, error) {
	name := strings.ToLower(vs.GetName())
	switch vs.GetKind() {
	case pg.VariableSetKind_VAR_SET_VALUE:
		v, err := setValue(vs.GetArgs())
		if err != nil {
			return "", err
		}
		if name == "transaction_isolation" && !s.inBlock {
			s.notice("WARNING", "25P01", "SET TRANSACTION can only be used in transaction blocks")
			return "SET", nil
		}
		return "SET", s.set(name, v)
	case pg.VariableSetKind_VAR_SET_DEFAULT, pg.VariableSetKind_VAR_RESET:
		if def, ok := settingDefaults[name]; ok {
			if name == "session_authorization" {
				def = s.user
			}
			s.setSetting(name, def)
			if vs.GetKind() == pg.VariableSetKind_VAR_RESET {
				return "RESET", nil
			}
			return "SET", nil
		}
		return "", pgerror.New(pgerror.CodeUndefinedObject, "unrecognized configuration parameter %q", name)
	case pg.VariableSetKind_VAR_RESET_ALL:
		keep := s.settings["session_authorization"]
		s.resetSettings(keep)
		return "RESET", nil
	case pg.VariableSetKind_VAR_SET_MULTI:
		switch name {
		case "transaction", "session characteristics":
			if err := s.transactionOptions(vs.GetArgs(), name != "transaction"); err != nil {
				return "", err
			}
			return "SET", nil
		case "time zone":
			v, err := setValue(vs.GetArgs())
			if err != nil {
				return "", err
			}
			return "SET", s.set("timezone", v)
		}
	}
	return "", pgerror.Unsupported("SET " + name)
}

// show returns the value of a setting for SHOW.
func (s *Session) show(name string) (string, error) {
	name = strings.ToLower(name)
	if name == "time zone" {
		name = "timezone"
	}
	if name == "transaction isolation level" {
		name = "transaction_isolation"
	}
	if name == "transaction_isolation" {
		if s.inBlock {
			return s.blockIsoName, nil
		}
		return s.settings["default_transaction_isolation"], nil
	}
	if name == "transaction_read_only" {
		return map[bool]string{true: "on", false: "off"}[s.readOnly()], nil
	}
	if name == "transaction_deferrable" {
		on := isOn(s.settings["default_transaction_deferrable"])
		if s.inBlock {
			on = s.blockDeferrable
		}
		return map[bool]string{true: "on", false: "off"}[on], nil
	}
	v, ok := s.settings[name]
	if !ok {
		return "", pgerror.New(pgerror.CodeUndefinedObject, "unrecognized configuration parameter %q", name)
	}
	return v, nil
}

// allSettings lists the settings for SHOW ALL and pg_settings.
func (s *Session) allSettings() [][2]string {
	var out [][2]string
	for k, v := range s.settings {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// transactionOptions applies SET TRANSACTION's options (isolation level,
// read only, deferrable) to the block, or with session to the session's
// defaults (SET SESSION CHARACTERISTICS AS TRANSACTION). BEGIN inside a
// block applies its options so too, as PostgreSQL does (psycopg2 sends
// its own BEGIN before a BEGIN ISOLATION LEVEL ... of the application).
func (s *Session) transactionOptions(args []*pg.Node, session bool) error {
	for _, o := range args {
		de := o.GetDefElem()
		if de == nil {
			continue
		}
		v, err := setValue([]*pg.Node{de.GetArg()})
		if err != nil {
			return err
		}
		switch de.GetDefname() {
		case "transaction_isolation":
			target := "transaction_isolation"
			if session {
				target = "default_transaction_isolation"
			} else if !s.inBlock {
				s.notice("WARNING", "25P01", "SET TRANSACTION can only be used in transaction blocks")
				continue
			}
			if err := s.set(target, v); err != nil {
				return err
			}
		case "transaction_read_only":
			on := isOn(v) || v == "true"
			switch {
			case session:
				if err := s.set("default_transaction_read_only", v); err != nil {
					return err
				}
			case !s.inBlock:
				s.notice("WARNING", "25P01", "SET TRANSACTION can only be used in transaction blocks")
			case !on && s.blockReadOnly && s.txn != nil:
				return pgerror.New(pgerror.CodeActiveSQLTransaction, "transaction read-write mode must be set before any query")
			default:
				s.blockReadOnly = on
			}
		case "transaction_deferrable":
			on := isOn(v) || v == "true"
			switch {
			case session:
				if err := s.set("default_transaction_deferrable", v); err != nil {
					return err
				}
			case !s.inBlock:
				s.notice("WARNING", "25P01", "SET TRANSACTION can only be used in transaction blocks")
			case s.txn != nil:
				return pgerror.New(pgerror.CodeActiveSQLTransaction, "SET TRANSACTION [NOT] DEFERRABLE must be called before any query")
			default:
				s.blockDeferrable = on
			}
		}
	}
	return nil
}
