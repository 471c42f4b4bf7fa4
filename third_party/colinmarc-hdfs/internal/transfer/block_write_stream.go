package transfer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2/internal/protocol/hadoop_hdfs"
	"google.golang.org/protobuf/proto"
)

const (
	outboundPacketSize = 65536
	outboundChunkSize  = 512
	maxPacketsInQueue  = 5
	heartbeatSeqno     = -1
	heartbeatInterval  = 30 * time.Second
)

// heartbeatPacket is sent every 30 seconds to keep the stream alive. It's
// always the same.
var heartbeatPacket []byte

func init() {
	b, err := proto.Marshal(&hdfs.PacketHeaderProto{
		OffsetInBlock:     proto.Int64(0),
		Seqno:             proto.Int64(heartbeatSeqno),
		LastPacketInBlock: proto.Bool(false),
		DataLen:           proto.Int32(0),
	})

	if err != nil {
		panic(err)
	}

	header := make([]byte, 6)
	binary.BigEndian.PutUint32(header, 4)
	binary.BigEndian.PutUint16(header[4:], uint16(len(b)))
	heartbeatPacket = append(header, b...)
}

// blockWriteStream writes data out to a datanode, and reads acks back. It
// keeps each packet until the whole pipeline has acknowledged it, so that a
// stream on a recovered pipeline can send again what this one lost.
type blockWriteStream struct {
	conn   io.ReadWriter
	buf    bytes.Buffer
	offset int64
	seqno  int

	// mu guards what the ack loop shares with the writer; acked is
	// broadcast on each ack and when the ack loop stops.
	mu         sync.Mutex
	acked      *sync.Cond
	unacked    []outboundPacket
	ackedBytes int64
	ackError   error
	acksDone   chan struct{}

	heartbeats    chan struct{}
	heartbeatsOff bool
	writeLock     sync.Mutex
}

type outboundPacket struct {
	seqno     int
	offset    int64
	last      bool
	checksums []byte
	data      []byte
}

type ackError struct {
	pipelineIndex int
	seqno         int
	status        hdfs.Status
}

func (ae ackError) Error() string {
	return fmt.Sprintf("Ack error from datanode: %s", ae.status.String())
}

var ErrInvalidSeqno = errors.New("invalid ack sequence number")

// newBlockWriteStream starts a stream whose next packet has the given
// sequence number and starts at offset in the block, of which the pipeline
// holds the first acked bytes.
func newBlockWriteStream(conn io.ReadWriter, offset int64, seqno int, acked int64) *blockWriteStream {
	s := &blockWriteStream{
		conn:       conn,
		offset:     offset,
		seqno:      seqno,
		ackedBytes: acked,
		acksDone:   make(chan struct{}),
		heartbeats: make(chan struct{}),
	}
	s.acked = sync.NewCond(&s.mu)

	// Send idle heartbeats every 30 seconds.
	go s.writeHeartbeats()

	// Ack packets in the background.
	go func() {
		s.ackPackets()
		close(s.acksDone)
	}()

	return s
}

// resume continues the block of old, whose pipeline failed, on conn: it
// takes over the bytes old had buffered and sends again the packets old's
// pipeline never acknowledged, as Hadoop's DataStreamer does after a
// pipeline recovery. old must be stopped.
func (old *blockWriteStream) resume(conn io.ReadWriter) (*blockWriteStream, error) {
	s := newBlockWriteStream(conn, old.offset, old.seqno, old.ackedBytes)
	s.buf.Write(old.buf.Bytes())
	for i, p := range old.unacked {
		if err := s.send(p); err != nil {
			s.mu.Lock()
			s.unacked = append(s.unacked, old.unacked[i+1:]...)
			s.mu.Unlock()
			return s, err
		}
	}
	return s, nil
}

// stop ends the stream after a failure: the caller has closed its
// connection, which ends the ack loop. Afterwards unacked, buf, offset and
// seqno are what the stream still owes the block.
func (s *blockWriteStream) stop() {
	s.stopHeartbeats()
	<-s.acksDone
}

// closing reports whether the stream has sent the end of the block, with
// all data before it acknowledged.
func (s *blockWriteStream) closing() bool {
	return len(s.unacked) == 1 && s.unacked[0].last
}

func (s *blockWriteStream) Write(b []byte) (int, error) {
	n, _ := s.buf.Write(b)
	return n, s.flush(false)
}

// finish flushes the rest of the buffered bytes and waits for them to be
// acknowledged, and then sends a final empty packet signifying the end of
// the block. Like Hadoop's client it waits for the data's acks first, so
// that a pipeline failing after the end of the block was sent only needs to
// be closed again (PIPELINE_CLOSE_RECOVERY).
func (s *blockWriteStream) finish() error {
	if err := s.flush(true); err != nil {
		return err
	}
	if err := s.waitAcked(); err != nil {
		return err
	}

	s.stopHeartbeats()
	lastPacket := outboundPacket{
		seqno:     s.seqno,
		offset:    s.offset,
		last:      true,
		checksums: []byte{},
		data:      []byte{},
	}
	s.seqno++
	if err := s.send(lastPacket); err != nil {
		return err
	}

	return s.waitAcked()
}

// flush parcels out the buffered bytes into packets, which it then flushes to
// the datanode.
func (s *blockWriteStream) flush(force bool) error {
	for s.buf.Len() > 0 && (force || s.buf.Len() >= outboundPacketSize) {
		packet := s.makePacket()
		s.offset += int64(len(packet.data))
		s.seqno++

		if err := s.send(packet); err != nil {
			return err
		}
	}

	return nil
}

// send queues p for its ack, waiting while maxPacketsInQueue packets are
// unacknowledged, and writes it out. On a failure p stays queued, to be sent
// again on a recovered pipeline.
func (s *blockWriteStream) send(p outboundPacket) error {
	s.mu.Lock()
	for len(s.unacked) >= maxPacketsInQueue && s.ackError == nil {
		s.acked.Wait()
	}
	s.unacked = append(s.unacked, p)
	err := s.ackError
	s.mu.Unlock()
	if err != nil {
		return err
	}

	s.writeLock.Lock()
	defer s.writeLock.Unlock()
	return s.writePacket(p)
}

// waitAcked waits until every packet sent is acknowledged, or the pipeline
// fails.
func (s *blockWriteStream) waitAcked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.unacked) > 0 && s.ackError == nil {
		s.acked.Wait()
	}
	return s.ackError
}

func (s *blockWriteStream) makePacket() outboundPacket {
	packetLength := outboundPacketSize
	if s.buf.Len() < outboundPacketSize {
		packetLength = s.buf.Len()
	}

	// If we're starting from a weird offset (usually because of an Append), HDFS
	// gets unhappy unless we first align to a chunk boundary with a small packet.
	// Otherwise it yells at us with "a partial chunk must be sent in an
	// individual packet" or just complains about a corrupted block.
	alignment := int(s.offset) % outboundChunkSize
	if alignment > 0 && packetLength > (outboundChunkSize-alignment) {
		packetLength = outboundChunkSize - alignment
	}

	numChunks := int(math.Ceil(float64(packetLength) / float64(outboundChunkSize)))
	packet := outboundPacket{
		seqno:     s.seqno,
		offset:    s.offset,
		last:      false,
		checksums: make([]byte, numChunks*4),
		// A copy: Next's slice is the buffer's, which later writes reuse,
		// and the packet is kept to be sent again.
		data: bytes.Clone(s.buf.Next(packetLength)),
	}

	// Fill in the checksum for each chunk of data.
	tab := crc32.MakeTable(crc32.Castagnoli)
	for i := 0; i < numChunks; i++ {
		chunkOff := i * outboundChunkSize
		chunkEnd := chunkOff + outboundChunkSize
		if chunkEnd >= len(packet.data) {
			chunkEnd = len(packet.data)
		}

		checksum := crc32.Checksum(packet.data[chunkOff:chunkEnd], tab)
		binary.BigEndian.PutUint32(packet.checksums[i*4:], checksum)
	}

	return packet
}

// ackPackets is meant to run in the background, reading acks and setting
// ackError if one fails. It returns once the end of the block is acked, or
// on the first failure.
func (s *blockWriteStream) ackPackets() {
	reader := bufio.NewReader(s.conn)
	for {
		// If we fail to read the ack at all, that counts as a failure from the
		// first datanode (the one we're connected to).
		ack := &hdfs.PipelineAckProto{}
		if err := readPrefixedMessage(reader, ack); err != nil {
			s.fail(err)
			return
		}

		seqno := int(ack.GetSeqno())
		// Like Hadoop's client, blame the last datanode that reports an error:
		// the ones before it only pass on its failure.
		replies := ack.GetReply()
		for i := len(replies) - 1; i >= 0; i-- {
			if replies[i] != hdfs.Status_SUCCESS {
				s.fail(ackError{status: replies[i], seqno: seqno, pipelineIndex: i})
				return
			}
		}
		if seqno == heartbeatSeqno {
			continue
		}

		s.mu.Lock()
		if len(s.unacked) == 0 || s.unacked[0].seqno != seqno {
			s.mu.Unlock()
			s.fail(ErrInvalidSeqno)
			return
		}
		p := s.unacked[0]
		s.unacked = s.unacked[1:]
		s.ackedBytes = p.offset + int64(len(p.data))
		s.acked.Broadcast()
		s.mu.Unlock()
		if p.last {
			return
		}
	}
}

func (s *blockWriteStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackError = err
	s.acked.Broadcast()
}

// A packet for the datanode:
// +-----------------------------------------------------------+
// |  uint32 length of the packet                              |
// +-----------------------------------------------------------+
// |  size of the PacketHeaderProto, uint16                    |
// +-----------------------------------------------------------+
// |  PacketHeaderProto                                        |
// +-----------------------------------------------------------+
// |  N checksums, 4 bytes each                                |
// +-----------------------------------------------------------+
// |  N chunks of payload data                                 |
// +-----------------------------------------------------------+
func (s *blockWriteStream) writePacket(p outboundPacket) error {
	headerInfo := &hdfs.PacketHeaderProto{
		OffsetInBlock:     proto.Int64(p.offset),
		Seqno:             proto.Int64(int64(p.seqno)),
		LastPacketInBlock: proto.Bool(p.last),
		DataLen:           proto.Int32(int32(len(p.data))),
	}

	// Don't ask me why this doesn't include the header proto...
	totalLength := len(p.data) + len(p.checksums) + 4

	header := make([]byte, 6, 6+totalLength)
	infoBytes, err := proto.Marshal(headerInfo)
	if err != nil {
		return err
	}

	binary.BigEndian.PutUint32(header, uint32(totalLength))
	binary.BigEndian.PutUint16(header[4:], uint16(len(infoBytes)))
	header = append(header, infoBytes...)
	header = append(header, p.checksums...)
	header = append(header, p.data...)

	_, err = s.conn.Write(header)
	if err != nil {
		return err
	}

	return nil
}

func (s *blockWriteStream) writeHeartbeats() {
	ticker := time.NewTicker(heartbeatInterval)
	defer ticker.Stop()

	for {
		select {
		case <-ticker.C:
			s.writeLock.Lock()
			if !s.heartbeatsOff {
				s.conn.Write(heartbeatPacket)
			}
			s.writeLock.Unlock()
		case <-s.heartbeats:
			return
		}
	}
}

// stopHeartbeats stops them for good: no heartbeat follows the end of the
// block or goes to a connection given up.
func (s *blockWriteStream) stopHeartbeats() {
	s.writeLock.Lock()
	defer s.writeLock.Unlock()
	if !s.heartbeatsOff {
		s.heartbeatsOff = true
		close(s.heartbeats)
	}
}
