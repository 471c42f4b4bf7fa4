package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_hdfs"
	"google.golang.org/protobuf/proto"
)

var ErrEndOfBlock = errors.New("end of block")

// maxPipelineRecoveries bounds the recoveries of one block's pipeline, as
// Hadoop's client gives up after five for the same packet.
const maxPipelineRecoveries = 5

// BlockWriter implements io.WriteCloser for writing a block to a datanode.
// Given a block location, it handles pipeline construction and failures,
// including communicating with the namenode if need be.
type BlockWriter struct {
	// ClientName is the unique ID used by the NamenodeConnection to initialize
	// the block.
	ClientName string
	// Block is the block location provided by the namenode. After a pipeline
	// recovery it holds the block's new generation stamp, token and
	// datanodes.
	Block *hdfs.LocatedBlockProto
	// BlockSize is the target size of the new block (or the existing one, if
	// appending). The represents the configured value, not the actual number
	// of bytes currently in the block.
	BlockSize int64
	// Offset is the current write offset in the block.
	Offset int64
	// Append indicates whether this is an append operation on an existing block.
	Append bool
	// UseDatanodeHostname indicates whether the datanodes will be connected to
	// via hostname (if true) or IP address (if false).
	UseDatanodeHostname bool
	// DialFunc is used to connect to the datanodes. If nil, then
	// (&net.Dialer{}).DialContext is used.
	DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	// Recovery, if not nil, lets the writer go on without a datanode of its
	// pipeline that fails; otherwise such a failure fails the writer.
	Recovery PipelineRecovery

	conn       net.Conn
	deadline   time.Time
	stream     *blockWriteStream
	connected  bool
	closed     bool
	recoveries int
	// err, once set, is the failure the writer could not recover from.
	err error
}

// PipelineRecovery is the namenode's part in replacing a block's write
// pipeline without a failed datanode (Hadoop's updateBlockForPipeline and
// updatePipeline calls).
type PipelineRecovery interface {
	// UpdateBlockForPipeline returns the block with a new generation stamp
	// and a new token, and the function that dials datanodes with that token.
	UpdateBlockForPipeline(block *hdfs.ExtendedBlockProto) (*hdfs.LocatedBlockProto, func(ctx context.Context, network, addr string) (net.Conn, error), error)
	// UpdatePipeline commits the new generation stamp, length and datanodes
	// of a block whose pipeline was set up again.
	UpdatePipeline(oldBlock, newBlock *hdfs.ExtendedBlockProto, nodes []*hdfs.DatanodeIDProto, storageIDs []string) error
}

// CreateBlockError is a failure to set up the pipeline of a new block,
// which holds no data yet: the caller may abandon the block and ask for
// another one without Datanode, as Hadoop's client does.
type CreateBlockError struct {
	Datanode *hdfs.DatanodeInfoProto
	Err      error
}

func (e *CreateBlockError) Error() string {
	return fmt.Sprintf("set up pipeline at datanode %s: %s", getDatanodeAddress(e.Datanode.GetId(), false), e.Err)
}

func (e *CreateBlockError) Unwrap() error { return e.Err }

// setupError is a failure to set up a pipeline, naming the pipeline index
// of the datanode at fault.
type setupError struct {
	index int
	err   error
}

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// SetDeadline sets the deadline for future Write, Flush, and Close calls. A
// zero value for t means those calls will not time out.
func (bw *BlockWriter) SetDeadline(t time.Time) error {
	bw.deadline = t
	if bw.conn != nil {
		return bw.conn.SetDeadline(t)
	}

	// Return the error at connection time.
	return nil
}

// Write implements io.Writer.
//
// A datanode of the pipeline that fails is dropped from it, and the block
// goes on with the others (see Recovery). Once Write returns any other
// error, every later call returns it.
func (bw *BlockWriter) Write(b []byte) (int, error) {
	if bw.err != nil {
		return 0, bw.err
	}
	var blockFull bool
	if bw.Offset >= bw.BlockSize {
		return 0, ErrEndOfBlock
	} else if (bw.Offset + int64(len(b))) > bw.BlockSize {
		blockFull = true
		b = b[:bw.BlockSize-bw.Offset]
	}

	if !bw.connected {
		if err := bw.connectFirst(); err != nil {
			return 0, err
		}
	}

	n, err := bw.stream.Write(b)
	bw.Offset += int64(n)
	for err != nil {
		if err = bw.recover(err); err != nil {
			return n, err
		}
		err = bw.stream.flush(false)
	}
	if blockFull {
		err = ErrEndOfBlock
	}

	return n, err
}

// Flush flushes any unwritten packets out to the datanode.
func (bw *BlockWriter) Flush() error {
	if bw.err != nil || bw.stream == nil {
		return bw.err
	}

	err := bw.stream.flush(true)
	for err != nil {
		if err = bw.recover(err); err != nil {
			return err
		}
		err = bw.stream.flush(true)
	}
	return nil
}

// Close implements io.Closer. It flushes any unwritten packets out to the
// datanode, and sends a final packet indicating the end of the block. The
// block must still be finalized with the namenode.
func (bw *BlockWriter) Close() error {
	if bw.closed || bw.err != nil {
		return bw.err
	}
	bw.closed = true
	if bw.stream == nil {
		return nil
	}
	defer func() {
		if bw.conn != nil {
			bw.conn.Close()
		}
	}()

	err := bw.stream.finish()
	for err != nil {
		if err = bw.recover(err); err != nil || bw.stream == nil {
			return err
		}
		err = bw.stream.finish()
	}
	return nil
}

// connectFirst sets up the block's first pipeline. A new block's failure is
// left to the caller (a CreateBlockError); an appended block's pipeline is
// recovered without the failed datanode.
func (bw *BlockWriter) connectFirst() error {
	bw.connected = true
	stage := hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE
	if bw.Append {
		stage = hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND
	}
	conn, err := bw.connect(stage, bw.Offset, bw.Offset, bw.generationTimestamp())
	if err == nil {
		bw.conn = conn
		bw.stream = newBlockWriteStream(conn, bw.Offset, 1, bw.Offset)
		return nil
	}

	var se *setupError
	if !bw.Append && errors.As(err, &se) {
		err = &CreateBlockError{Datanode: bw.Block.GetLocs()[se.index], Err: se.err}
	} else {
		err = bw.recover(err)
	}
	if err != nil {
		bw.err = err
	}
	return err
}

// recover sets up the pipeline again after cause, as Hadoop's DataStreamer
// does: it drops the datanode at fault (the one an ack or a failed setup
// names, else the first), gets a new generation stamp from the namenode,
// connects to the remaining datanodes at the recovery stage, commits the
// new pipeline with the namenode and sends again what was not acknowledged.
// A block whose end was sent with all data acked is only closed again. It
// gives up, failing the writer, when no datanode is left, after
// maxPipelineRecoveries, or on any failure of the namenode.
func (bw *BlockWriter) recover(cause error) error {
	old := bw.stream
	if bw.conn != nil {
		bw.conn.Close()
		bw.conn = nil
	}
	if old != nil {
		old.stop()
	}
	bw.stream = nil

	for {
		if bw.Recovery == nil || bw.recoveries >= maxPipelineRecoveries {
			bw.err = cause
			return cause
		}
		bw.recoveries++

		nodes, storageIDs := withoutDatanode(bw.Block, badDatanode(cause))
		if len(nodes) == 0 {
			bw.err = fmt.Errorf("every datanode of the pipeline failed: %w", cause)
			return bw.err
		}
		bw.Block.Locs, bw.Block.StorageIDs = nodes, storageIDs

		located, dial, err := bw.Recovery.UpdateBlockForPipeline(bw.Block.GetB())
		if err != nil {
			bw.err = err
			return err
		}
		bw.Block.BlockToken = located.GetBlockToken()
		bw.DialFunc = dial
		newGS := located.GetB().GetGenerationStamp()

		stage := hdfs.OpWriteBlockProto_PIPELINE_SETUP_STREAMING_RECOVERY
		acked, sent := bw.Offset, bw.Offset
		switch {
		case old == nil:
			stage = hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND_RECOVERY
		case old.closing():
			stage = hdfs.OpWriteBlockProto_PIPELINE_CLOSE_RECOVERY
			acked, sent = old.ackedBytes, old.offset
		default:
			acked, sent = old.ackedBytes, old.offset
		}
		conn, err := bw.connect(stage, acked, sent, newGS)
		if err != nil {
			cause = err
			continue
		}

		newBlock := proto.Clone(bw.Block.GetB()).(*hdfs.ExtendedBlockProto)
		newBlock.GenerationStamp = proto.Uint64(newGS)
		newBlock.NumBytes = proto.Uint64(uint64(acked))
		ids := make([]*hdfs.DatanodeIDProto, len(nodes))
		for i, n := range nodes {
			ids[i] = n.GetId()
		}
		if err := bw.Recovery.UpdatePipeline(bw.Block.GetB(), newBlock, ids, storageIDs); err != nil {
			conn.Close()
			bw.err = err
			return err
		}
		bw.Block.B.GenerationStamp = newBlock.GenerationStamp

		if stage == hdfs.OpWriteBlockProto_PIPELINE_CLOSE_RECOVERY {
			// The datanodes finalized the block when they accepted the
			// connection; nothing more goes over it.
			conn.Close()
			return nil
		}
		bw.conn = conn
		if old == nil {
			bw.stream = newBlockWriteStream(conn, bw.Offset, 1, bw.Offset)
			return nil
		}
		bw.stream, err = old.resume(conn)
		if err == nil {
			return nil
		}
		cause = err
		conn.Close()
		bw.conn = nil
		old = bw.stream
		old.stop()
		bw.stream = nil
	}
}

// badDatanode is the pipeline index of the datanode that cause blames: the
// one an error ack or a failed setup names, else the first one, to which
// the writer is connected.
func badDatanode(cause error) int {
	var ae ackError
	var se *setupError
	switch {
	case errors.As(cause, &ae):
		return ae.pipelineIndex
	case errors.As(cause, &se):
		return se.index
	}
	return 0
}

func withoutDatanode(block *hdfs.LocatedBlockProto, i int) ([]*hdfs.DatanodeInfoProto, []string) {
	locs := block.GetLocs()
	if i >= len(locs) {
		i = 0
	}
	nodes := append(append([]*hdfs.DatanodeInfoProto{}, locs[:i]...), locs[i+1:]...)
	var storageIDs []string
	if ids := block.GetStorageIDs(); len(ids) == len(locs) {
		storageIDs = append(append([]string{}, ids[:i]...), ids[i+1:]...)
	}
	return nodes, storageIDs
}

// connect sets up the pipeline of bw.Block's datanodes at stage. A failure
// is a setupError naming the datanode at fault.
func (bw *BlockWriter) connect(stage hdfs.OpWriteBlockProto_BlockConstructionStage, acked, sent int64, genStamp uint64) (net.Conn, error) {
	pipeline := bw.Block.GetLocs()
	if len(pipeline) == 0 {
		return nil, errors.New("no datanode to write the block to")
	}
	address := getDatanodeAddress(pipeline[0].GetId(), bw.UseDatanodeHostname)

	if bw.DialFunc == nil {
		bw.DialFunc = (&net.Dialer{}).DialContext
	}

	conn, err := bw.DialFunc(context.Background(), "tcp", address)
	if err != nil {
		return nil, &setupError{index: 0, err: err}
	}

	resp, err := bw.requestWrite(conn, stage, acked, sent, genStamp)
	if err != nil {
		conn.Close()
		return nil, &setupError{index: 0, err: err}
	}
	if resp.GetStatus() != hdfs.Status_SUCCESS {
		conn.Close()
		err := fmt.Errorf("write failed: %s (%s)", resp.GetStatus().String(), resp.GetMessage())
		index := 0
		for i, dn := range pipeline {
			if getDatanodeAddress(dn.GetId(), false) == resp.GetFirstBadLink() {
				index = i
			}
		}
		return nil, &setupError{index: index, err: err}
	}

	return conn, nil
}

func (bw *BlockWriter) requestWrite(conn net.Conn, stage hdfs.OpWriteBlockProto_BlockConstructionStage, acked, sent int64, genStamp uint64) (*hdfs.BlockOpResponseProto, error) {
	if err := conn.SetDeadline(bw.deadline); err != nil {
		return nil, err
	}
	if err := bw.writeBlockWriteRequest(conn, stage, acked, sent, genStamp); err != nil {
		return nil, err
	}
	return readBlockOpResponse(conn)
}

func (bw *BlockWriter) generationTimestamp() uint64 {
	if bw.Append {
		return bw.Block.B.GetGenerationStamp()
	}

	return 0
}

// writeBlockWriteRequest creates an OpWriteBlock message and submits it to the
// datanode. This occurs before any writing actually occurs, and is intended
// to synchronize the client with the datanode, returning an error if the
// submitted expected state differs from the actual state on the datanode.
//
// The field "MinBytesRcvd" below is used during append operation and should be
// the block's expected size. The field "MaxBytesRcvd" is used only in the case
// of PIPELINE_SETUP_STREAMING_RECOVERY.
//
// See: https://github.com/apache/hadoop/blob/6314843881b4c67d08215e60293f8b33242b9416/hadoop-hdfs-project/hadoop-hdfs/src/main/java/org/apache/hadoop/hdfs/server/datanode/BlockReceiver.java#L216
// And: https://github.com/apache/hadoop/blob/6314843881b4c67d08215e60293f8b33242b9416/hadoop-hdfs-project/hadoop-hdfs/src/main/java/org/apache/hadoop/hdfs/server/datanode/fsdataset/impl/FsDatasetImpl.java#L1462
func (bw *BlockWriter) writeBlockWriteRequest(w io.Writer, stage hdfs.OpWriteBlockProto_BlockConstructionStage, acked, sent int64, genStamp uint64) error {
	targets := bw.Block.GetLocs()[1:]

	op := &hdfs.OpWriteBlockProto{
		Header: &hdfs.ClientOperationHeaderProto{
			BaseHeader: &hdfs.BaseHeaderProto{
				Block: bw.Block.GetB(),
				Token: bw.Block.GetBlockToken(),
			},
			ClientName: proto.String(bw.ClientName),
		},
		Targets:               targets,
		Stage:                 stage.Enum(),
		PipelineSize:          proto.Uint32(uint32(len(targets))),
		MinBytesRcvd:          proto.Uint64(uint64(acked)),
		MaxBytesRcvd:          proto.Uint64(uint64(sent)),
		LatestGenerationStamp: proto.Uint64(genStamp),
		RequestedChecksum: &hdfs.ChecksumProto{
			Type:             hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
			BytesPerChecksum: proto.Uint32(outboundChunkSize),
		},
	}

	return writeBlockOpRequest(w, writeBlockOp, op)
}
