package typeser

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// CodecOf is the codec of a serializer snapshot of class, as a header
// holding it would give.
func CodecOf(t *testing.T, class string) snapshot.Codec {
	t.Helper()
	return Codec{S: coreTable.Bind(&SerializerSnapshot{Class: class})}
}

// Float.hashCode is Float.floatToIntBits: the bits, NaN canonical.
func TestFloatKeyHash(t *testing.T) {
	c := CodecOf(t, "org.apache.flink.api.common.typeutils.base.FloatSerializer$FloatSerializerSnapshot")
	for _, v := range []struct {
		bits uint32
		want int32
	}{{math.Float32bits(1.5), 0x3fc00000}, {0x80000000, math.MinInt32}, {0x7fc00001, 0x7fc00000}, {0xffffffff, 0x7fc00000}} {
		h, err := c.HashCode(binary.BigEndian.AppendUint32(nil, v.bits))
		if err != nil || h != v.want {
			t.Errorf("hash of float bits %08x = %d, %v; want %d", v.bits, h, err, v.want)
		}
	}
}

// Keys whose Java hashCode stateutil cannot derive are refused with the
// serializer named, never hashed wrong.
func TestUnhashableKeysNameTheirSerializer(t *testing.T) {
	for _, class := range []string{
		"org.apache.flink.api.java.typeutils.runtime.PojoSerializer$PojoSerializerSnapshot",
		"org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot",
		"org.apache.flink.api.common.typeutils.base.array.StringArraySerializer$StringArraySerializerSnapshot",
		"org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot",
		"org.apache.flink.api.scala.typeutils.ScalaCaseClassSerializerSnapshot",
	} {
		_, err := CodecOf(t, class).HashCode([]byte{1, 2, 3, 4})
		if !errors.Is(err, keygroup.ErrUnknownKeyType) || !strings.Contains(err.Error(), class) {
			t.Errorf("%s: %v", class, err)
		}
	}
}
