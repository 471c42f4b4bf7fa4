package hdfs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_hdfs"
	"github.com/colinmarc/hdfs/v2/internal/transfer"
	"google.golang.org/protobuf/proto"
)

var ErrReplicating = errors.New("replication in progress")

// IsErrReplicating returns true if the passed error is an os.PathError wrapping
// ErrReplicating.
func IsErrReplicating(err error) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == ErrReplicating
}

// A FileWriter represents a writer for an open file in HDFS. It implements
// Writer and Closer, and can only be used for writes. For reads, see
// FileReader and Client.Open.
type FileWriter struct {
	client      *Client
	name        string
	replication int
	blockSize   int64
	fileId      *uint64

	blockWriter *transfer.BlockWriter
	deadline    time.Time
	// previous is the block before blockWriter's, which asking the
	// namenode for a replacement of the latter names again.
	previous *hdfs.ExtendedBlockProto
	// excluded are the datanodes that failed to set up the pipeline of a new
	// block; the namenode chooses none of them for the file's later blocks.
	excluded []*hdfs.DatanodeInfoProto
	// replaced counts the replacements of the current block.
	replaced int
	// last is the file's last block once Close has finalized it: a retried
	// complete must name it again, since the namenode commits it only once
	// the block before it is complete.
	last *hdfs.ExtendedBlockProto
}

// Create opens a new file in HDFS with the default replication, block size,
// and permissions (0644), and returns an io.WriteCloser for writing
// to it. Because of the way that HDFS writes are buffered and acknowledged
// asynchronously, it is very important that Close is called after all data has
// been written.
func (c *Client) Create(name string) (*FileWriter, error) {
	_, err := c.getFileInfo(name)
	err = interpretException(err)
	if err == nil {
		return nil, &os.PathError{"create", name, os.ErrExist}
	} else if !os.IsNotExist(err) {
		return nil, &os.PathError{"create", name, err}
	}

	defaults, err := c.fetchDefaults()
	if err != nil {
		return nil, err
	}

	replication := int(defaults.GetReplication())
	blockSize := int64(defaults.GetBlockSize())
	return c.CreateFile(name, replication, blockSize, 0644)
}

// CreateFile opens a new file in HDFS with the given replication, block size,
// and permissions, and returns an io.WriteCloser for writing to it. Because of
// the way that HDFS writes are buffered and acknowledged asynchronously, it is
// very important that Close is called after all data has been written.
func (c *Client) CreateFile(name string, replication int, blockSize int64, perm os.FileMode) (*FileWriter, error) {
	createReq := &hdfs.CreateRequestProto{
		Src:          proto.String(name),
		Masked:       &hdfs.FsPermissionProto{Perm: proto.Uint32(uint32(perm))},
		ClientName:   proto.String(c.namenode.ClientName),
		CreateFlag:   proto.Uint32(1),
		CreateParent: proto.Bool(false),
		Replication:  proto.Uint32(uint32(replication)),
		BlockSize:    proto.Uint64(uint64(blockSize)),
	}
	createResp := &hdfs.CreateResponseProto{}

	err := c.namenode.Execute("create", createReq, createResp)
	if err != nil {
		return nil, &os.PathError{"create", name, interpretCreateException(err)}
	}

	return &FileWriter{
		client:      c,
		name:        name,
		replication: replication,
		blockSize:   blockSize,
		fileId:      createResp.Fs.FileId,
	}, nil
}

// Append opens an existing file in HDFS and returns an io.WriteCloser for
// writing to it. Because of the way that HDFS writes are buffered and
// acknowledged asynchronously, it is very important that Close is called after
// all data has been written.
func (c *Client) Append(name string) (*FileWriter, error) {
	_, err := c.getFileInfo(name)
	if err != nil {
		return nil, &os.PathError{"append", name, interpretException(err)}
	}

	appendReq := &hdfs.AppendRequestProto{
		Src:        proto.String(name),
		ClientName: proto.String(c.namenode.ClientName),
	}
	appendResp := &hdfs.AppendResponseProto{}

	err = c.namenode.Execute("append", appendReq, appendResp)
	if err != nil {
		return nil, &os.PathError{"append", name, interpretException(err)}
	}

	f := &FileWriter{
		client:      c,
		name:        name,
		replication: int(appendResp.Stat.GetBlockReplication()),
		blockSize:   int64(appendResp.Stat.GetBlocksize()),
		fileId:      appendResp.Stat.FileId,
	}

	// This returns nil if there are no blocks (it's an empty file) or if the
	// last block is full (so we have to start a fresh block).
	block := appendResp.GetBlock()
	if block == nil {
		return f, nil
	}

	dialFunc, err := f.client.wrapDatanodeDial(
		f.client.options.DatanodeDialFunc,
		block.GetBlockToken())
	if err != nil {
		return nil, err
	}

	f.blockWriter = &transfer.BlockWriter{
		ClientName:          f.client.namenode.ClientName,
		Block:               block,
		BlockSize:           f.blockSize,
		Offset:              int64(block.B.GetNumBytes()),
		Append:              true,
		UseDatanodeHostname: f.client.options.UseDatanodeHostname,
		DialFunc:            dialFunc,
		Recovery:            pipelineRecovery{f},
	}

	err = f.blockWriter.SetDeadline(f.deadline)
	if err != nil {
		return nil, err
	}

	return f, nil
}

// CreateEmptyFile creates a empty file at the given name, with the
// permissions 0644.
func (c *Client) CreateEmptyFile(name string) error {
	f, err := c.Create(name)
	if err != nil {
		return err
	}

	return f.Close()
}

// SetDeadline sets the deadline for future Write, Flush, and Close calls. A
// zero value for t means those calls will not time out.
//
// Note that because of buffering, Write calls that do not result in a blocking
// network call may still succeed after the deadline.
func (f *FileWriter) SetDeadline(t time.Time) error {
	f.deadline = t
	if f.blockWriter != nil {
		return f.blockWriter.SetDeadline(t)
	}

	// Return the error at connection time.
	return nil
}

// Write implements io.Writer for writing to a file in HDFS. Internally, it
// writes data to an internal buffer first, and then later out to HDFS. Because
// of this, it is important that Close is called after all data has been
// written.
func (f *FileWriter) Write(b []byte) (int, error) {
	if f.blockWriter == nil {
		err := f.startNewBlock()
		if err != nil {
			return 0, err
		}
	}

	off := 0
	for off < len(b) {
		n, err := f.blockWriter.Write(b[off:])
		off += n
		var createErr *transfer.CreateBlockError
		if err == transfer.ErrEndOfBlock {
			err = f.startNewBlock()
		} else if errors.As(err, &createErr) {
			err = f.replaceBlock(createErr)
		}

		if err != nil {
			return off, err
		}
	}

	return off, nil
}

// Flush flushes any buffered data out to the datanodes. Even immediately after
// a call to Flush, it is still necessary to call Close once all data has been
// written.
func (f *FileWriter) Flush() error {
	if f.blockWriter != nil {
		return f.blockWriter.Flush()
	}

	return nil
}

// Close closes the file, writing any remaining data out to disk and waiting
// for acknowledgements from the datanodes. It is important that Close is called
// after all data has been written.
//
// If the datanodes have acknowledged all writes but not yet to the namenode,
// it can return ErrReplicating (wrapped in an os.PathError). This indicates
// that all data has been written, but the lease is still open for the file.
// It is safe in this case to either ignore the error (and let the lease expire
// on its own) or to call Close multiple times until it completes without an
// error. The Java client, for context, always chooses to retry, with
// exponential backoff.
func (f *FileWriter) Close() error {
	if f.blockWriter != nil {
		// Close the blockWriter, flushing any buffered packets.
		last, err := f.finalizeBlock()
		if err != nil {
			return err
		}
		f.last = last
	}

	completeReq := &hdfs.CompleteRequestProto{
		Src:        proto.String(f.name),
		ClientName: proto.String(f.client.namenode.ClientName),
		Last:       f.last,
		FileId:     f.fileId,
	}
	completeResp := &hdfs.CompleteResponseProto{}

	err := f.client.namenode.Execute("complete", completeReq, completeResp)
	if err != nil {
		return &os.PathError{"create", f.name, err}
	} else if completeResp.GetResult() == false {
		return &os.PathError{"create", f.name, ErrReplicating}
	}

	return nil
}

func (f *FileWriter) startNewBlock() error {
	var previous *hdfs.ExtendedBlockProto
	if f.blockWriter != nil {
		// TODO: We don't actually need to wait for previous blocks to ack before
		// continuing.
		var err error
		previous, err = f.finalizeBlock()
		if err != nil {
			return err
		}
	}

	f.previous = previous
	f.replaced = 0
	return f.allocateBlock()
}

// blockWriteRetries is how often a new block whose pipeline could not be
// set up is replaced (Hadoop's dfs.client.block.write.retries).
const blockWriteRetries = 3

// replaceBlock abandons the current block, whose pipeline failed before it
// held any data, and asks for another one on other datanodes, as Hadoop's
// client does.
func (f *FileWriter) replaceBlock(failure *transfer.CreateBlockError) error {
	if f.replaced >= blockWriteRetries {
		return &os.PathError{"create", f.name, failure}
	}
	f.replaced++

	abandonReq := &hdfs.AbandonBlockRequestProto{
		B:      f.blockWriter.Block.GetB(),
		Src:    proto.String(f.name),
		Holder: proto.String(f.client.namenode.ClientName),
		FileId: f.fileId,
	}
	err := f.client.namenode.Execute("abandonBlock", abandonReq, &hdfs.AbandonBlockResponseProto{})
	if err != nil {
		return &os.PathError{"create", f.name, interpretException(err)}
	}

	f.excluded = append(f.excluded, failure.Datanode)
	if err := f.allocateBlock(); err != nil {
		// The namenode has no datanode left for the block: the pipeline's
		// failure is why the write cannot go on.
		return &os.PathError{"create", f.name, fmt.Errorf("%w; no other datanode: %v", failure, err)}
	}
	return nil
}

func (f *FileWriter) allocateBlock() error {
	addBlockReq := &hdfs.AddBlockRequestProto{
		Src:          proto.String(f.name),
		ClientName:   proto.String(f.client.namenode.ClientName),
		Previous:     f.previous,
		FileId:       f.fileId,
		ExcludeNodes: f.excluded,
	}
	addBlockResp := &hdfs.AddBlockResponseProto{}

	err := f.addBlock(addBlockReq, addBlockResp)
	if err != nil {
		return &os.PathError{"create", f.name, interpretException(err)}
	}

	block := addBlockResp.GetBlock()
	dialFunc, err := f.client.wrapDatanodeDial(
		f.client.options.DatanodeDialFunc, block.GetBlockToken())
	if err != nil {
		return err
	}

	f.blockWriter = &transfer.BlockWriter{
		ClientName:          f.client.namenode.ClientName,
		Block:               block,
		BlockSize:           f.blockSize,
		UseDatanodeHostname: f.client.options.UseDatanodeHostname,
		DialFunc:            dialFunc,
		Recovery:            pipelineRecovery{f},
	}

	return f.blockWriter.SetDeadline(f.deadline)
}

// addBlock asks for the next block. The namenode refuses while the block
// before the previous one is not yet reported by enough datanodes; like the
// Java client, retry with backoff, until the deadline or for a minute.
func (f *FileWriter) addBlock(req *hdfs.AddBlockRequestProto, resp *hdfs.AddBlockResponseProto) error {
	deadline := f.deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(time.Minute)
	}
	wait := 50 * time.Millisecond
	for {
		err := f.client.namenode.Execute("addBlock", req, resp)
		remoteErr, ok := err.(Error)
		if !ok || remoteErr.Exception() != notReplicatedYetException || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// finalizeBlock closes the current block and returns it as the namenode is
// to commit it: its generation stamp the last pipeline's, its length the
// bytes written.
func (f *FileWriter) finalizeBlock() (*hdfs.ExtendedBlockProto, error) {
	err := f.blockWriter.Close()
	if err != nil {
		return nil, err
	}

	// Finalize the block on the namenode.
	lastBlock := f.blockWriter.Block.GetB()
	lastBlock.NumBytes = proto.Uint64(uint64(f.blockWriter.Offset))
	updateReq := &hdfs.UpdateBlockForPipelineRequestProto{
		Block:      lastBlock,
		ClientName: proto.String(f.client.namenode.ClientName),
	}
	updateResp := &hdfs.UpdateBlockForPipelineResponseProto{}

	err = f.client.namenode.Execute("updateBlockForPipeline", updateReq, updateResp)
	if err != nil {
		return nil, err
	}

	f.blockWriter = nil
	return lastBlock, nil
}

// pipelineRecovery is the namenode's part in the recovery of the pipeline
// of a file's block.
type pipelineRecovery struct {
	f *FileWriter
}

func (r pipelineRecovery) UpdateBlockForPipeline(block *hdfs.ExtendedBlockProto) (*hdfs.LocatedBlockProto, func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	req := &hdfs.UpdateBlockForPipelineRequestProto{
		Block:      block,
		ClientName: proto.String(r.f.client.namenode.ClientName),
	}
	resp := &hdfs.UpdateBlockForPipelineResponseProto{}
	if err := r.f.client.namenode.Execute("updateBlockForPipeline", req, resp); err != nil {
		return nil, nil, &os.PathError{"create", r.f.name, interpretException(err)}
	}

	// The same dialer as the block's first pipeline, with the new token.
	dial, err := r.f.client.wrapDatanodeDial(r.f.client.options.DatanodeDialFunc, resp.GetBlock().GetBlockToken())
	return resp.GetBlock(), dial, err
}

func (r pipelineRecovery) UpdatePipeline(oldBlock, newBlock *hdfs.ExtendedBlockProto, nodes []*hdfs.DatanodeIDProto, storageIDs []string) error {
	req := &hdfs.UpdatePipelineRequestProto{
		ClientName: proto.String(r.f.client.namenode.ClientName),
		OldBlock:   oldBlock,
		NewBlock:   newBlock,
		NewNodes:   nodes,
		StorageIDs: storageIDs,
	}
	if err := r.f.client.namenode.Execute("updatePipeline", req, &hdfs.UpdatePipelineResponseProto{}); err != nil {
		return &os.PathError{"create", r.f.name, interpretException(err)}
	}
	return nil
}
