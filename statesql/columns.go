package statesql

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/snapshot"
)

// UndecodedSuffix names the column beside a typed column that holds, as a
// struct of class and bytes, the values that were not decoded (NULL where
// they were): columns whose type some values may not decode to have one.
const UndecodedSuffix = "_undecoded"

// decoded is a column of decoded bytes (a key, a namespace, a value) and,
// where some values may not decode to its type, its undecoded column.
type decoded struct {
	name      string
	schema    snapshot.Schema
	codec     snapshot.Codec // nil: no codec knows the type
	class     string         // the type, for values no codec decodes
	scalar    func(b []byte) (snapshot.Scalar, bool)
	info      duckdb.TypeInfo
	undecoded bool // it has an undecoded column, next to it
}

// newDecoded builds the column name of type t's values.
func (ty *types) newDecoded(codecs *snapshot.Codecs, name string, t snapshot.Type) (*decoded, error) {
	d := &decoded{name: name, schema: codecs.Schema(t), class: t.String()}
	if codec, err := codecs.Codec(t); err == nil {
		d.codec = codec
		if sd, ok := codec.(snapshot.ScalarDecoder); ok && scalarFits[d.schema.Kind] != 0 {
			d.scalar = sd.DecodeScalar
		}
	}
	d.undecoded = d.schema.Partial && d.schema.Kind != snapshot.SchemaUndecoded
	info, err := ty.of(d.schema)
	if err != nil {
		return nil, fmt.Errorf("column %s of type %s: %w", name, t, err)
	}
	d.info = info
	return d, nil
}

// scalarFits is the kind of Scalar each scalar schema's values decode to.
var scalarFits = map[snapshot.SchemaKind]snapshot.ScalarKind{
	snapshot.SchemaBool: snapshot.ScalarBool, snapshot.SchemaInt8: snapshot.ScalarInt, snapshot.SchemaInt16: snapshot.ScalarInt,
	snapshot.SchemaInt32: snapshot.ScalarInt, snapshot.SchemaInt64: snapshot.ScalarInt, snapshot.SchemaString: snapshot.ScalarString,
}

// infos are the column's DuckDB columns.
func (d *decoded) infos() []duckdb.ColumnInfo {
	out := []duckdb.ColumnInfo{{Name: d.name, T: d.info}}
	if d.undecoded {
		out = append(out, duckdb.ColumnInfo{Name: d.name + UndecodedSuffix, T: undecodedType()})
	}
	return out
}

// errNotDecodable is a value whose bytes its codec cannot decode: damage.
var errNotDecodable = errors.New("cannot decode")

// value decodes b: the value for the typed column, or what was not
// decoded. A value that is neither is damage (wrapping snapshot.ErrCorrupt).
func (d *decoded) value(b []byte) (v any, nd *snapshot.NotDecoded, err error) {
	if d.codec == nil {
		nd := snapshot.NotDecoded{Class: d.class, Bytes: b}
		if d.schema.Kind == snapshot.SchemaUndecoded {
			return undecoded(nd), nil, nil
		}
		return nil, &nd, nil
	}
	dv, err := d.codec.Decode(b)
	if ndErr := (*snapshot.NotDecodedError)(nil); errors.As(err, &ndErr) {
		// What was not decoded, as dump shows it: the bytes the codec names
		// (a Kryo object's after its class), else the value's.
		nd := snapshot.NotDecoded{Class: ndErr.Class, Bytes: ndErr.Bytes}
		if nd.Bytes == nil {
			nd.Bytes = b
		}
		switch {
		case d.schema.Kind == snapshot.SchemaUndecoded:
			return undecoded(nd), nil, nil
		case d.undecoded:
			return nil, &nd, nil
		}
		return nil, nil, fmt.Errorf("%w: %s: %v, yet its type %s says every value decodes", snapshot.ErrCorrupt, d.name, err, d.class)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s %s of type %s: %v", snapshot.ErrCorrupt, errNotDecodable, d.name, d.class, err)
	}
	if nd, ok := dv.(snapshot.NotDecoded); ok && d.undecoded {
		return nil, &nd, nil
	}
	cv, err := convert(&d.schema, dv)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s of type %s: %s is not a %s (%v)", snapshot.ErrCorrupt, d.name, d.class, jsonShort(dv), d.schema, err)
	}
	return cv, nil, nil
}

// set writes the value of b to column col of row (and its undecoded
// column), decoding nothing the query does not read.
func (d *decoded) set(row duckdb.Row, col int, b []byte) error {
	typed := row.IsProjected(col)
	if !typed && !(d.undecoded && row.IsProjected(col+1)) {
		return nil
	}
	if d.scalar != nil {
		if s, ok := d.scalar(b); ok && (s.Kind == scalarFits[d.schema.Kind] || s.Kind == snapshot.ScalarNull) {
			if d.undecoded {
				if err := row.SetRowValue(col+1, nil); err != nil {
					return err
				}
			}
			switch s.Kind {
			case snapshot.ScalarNull:
				return row.SetRowValue(col, nil)
			case snapshot.ScalarString:
				return duckdb.SetRowValue(row, col, s.Str)
			case snapshot.ScalarBool:
				return duckdb.SetRowValue(row, col, s.Int == 1)
			}
			return duckdb.SetRowValue(row, col, s.Int)
		}
	}
	v, nd, err := d.value(b)
	if err != nil {
		return err
	}
	if d.undecoded {
		var u any
		if nd != nil {
			u = undecoded(*nd)
		}
		if err := row.SetRowValue(col+1, u); err != nil {
			return err
		}
	}
	return row.SetRowValue(col, v)
}

// jsonShort is v's JSON text, cut for a message.
func jsonShort(v any) string {
	j, err := jsonOf(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	s := string(j.(json.RawMessage))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
