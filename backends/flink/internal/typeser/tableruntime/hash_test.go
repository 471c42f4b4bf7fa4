package tableruntime

import (
	"encoding/binary"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
)

// BinaryRowData keys hash by their bytes (the int length written before
// them excluded); TestFlinkWriterRestoresInFlink's rowdata case checks
// every key of a real Flink savepoint lies where Flink put it.
func TestBinaryRowKeyHash(t *testing.T) {
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"})}
	row := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x6b, 0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x82}
	key := binary.BigEndian.AppendUint32(nil, uint32(len(row)))
	key = append(key, row...)
	h, err := c.HashCode(key)
	if err != nil || h != BinaryRowHash(row) {
		t.Fatalf("HashCode = %d, %v; BinaryRowHash = %d", h, err, BinaryRowHash(row))
	}
	if BinaryRowHash(row) == BinaryRowHash(append(append([]byte{}, row[:23]...), 0x83)) {
		t.Error("a changed byte does not change the hash")
	}
	if _, err := c.HashCode(key[:10]); err == nil {
		t.Error("a truncated row hashed")
	}
}

// testTable reads this family's serializers beside flink-core's.
var testTable = typeser.NewTable(Family)
