package envelope

import (
	"context"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// ReadMsgpack reads the framed file at path and decodes its msgpack body
// into v, refusing length claims the body cannot back, and strings longer
// than a snapshot's may be (snapshot.MaxStringBytes), before the decoder
// allocates for them (see safemsgpack). Errors reading the file come back
// as they are.
func (k Kind) ReadMsgpack(ctx context.Context, st storage.Storage, path string, bodyLimit int64, v any) error {
	body, err := k.Read(ctx, st, path, bodyLimit)
	if err != nil {
		return err
	}
	return k.DecodeMsgpack(body, st.URI(path), v)
}

// DecodeMsgpack decodes a verified body into v, as ReadMsgpack does.
func (k Kind) DecodeMsgpack(body []byte, name string, v any) error {
	if off, err := safemsgpack.Check(body, snapshot.MaxStringBytes); err != nil {
		return snapshot.Corrupt(name, HeaderSize+off, "%s body: %v", k.Name, err)
	}
	if err := msgpack.Unmarshal(body, v); err != nil {
		return snapshot.Corrupt(name, HeaderSize, "undecodable %s body: %v", k.Name, err)
	}
	return nil
}
