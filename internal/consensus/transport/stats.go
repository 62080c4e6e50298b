package transport

import "sync/atomic"

// Stats are cumulative counters since the Transport was created.
type Stats struct {
	FramesSent     uint64
	FramesReceived uint64
	// MessagesSent and MessagesReceived count raft messages, coalesced
	// heartbeats included.
	MessagesSent     uint64
	MessagesReceived uint64
	// HeartbeatsCoalesced counts heartbeats and heartbeat responses sent as
	// compact tuples rather than full messages.
	HeartbeatsCoalesced uint64
	// BytesSent and BytesReceived count encoded frame bytes (not gRPC or TCP
	// overhead).
	BytesSent     uint64
	BytesReceived uint64
	// MessagesDropped counts raft messages given to Send that were never
	// sent: queue overflow, down link, failed or broken stream.
	MessagesDropped uint64
	// FramesDroppedOut and FramesDroppedIn count frames discarded because
	// the link was down (SetLinkDown), on the sending and receiving side.
	FramesDroppedOut uint64
	FramesDroppedIn  uint64
	// FramesRejectedSkew counts frames refused because their hybrid time was
	// further ahead of the local clock than the maximum offset allows.
	FramesRejectedSkew uint64
}

// counters is the live, atomically updated form of Stats.
type counters struct {
	framesSent, framesReceived        atomic.Uint64
	messagesSent, messagesReceived    atomic.Uint64
	heartbeatsCoalesced               atomic.Uint64
	bytesSent, bytesReceived          atomic.Uint64
	messagesDropped                   atomic.Uint64
	framesDroppedOut, framesDroppedIn atomic.Uint64
	framesRejectedSkew                atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		FramesSent:          c.framesSent.Load(),
		FramesReceived:      c.framesReceived.Load(),
		MessagesSent:        c.messagesSent.Load(),
		MessagesReceived:    c.messagesReceived.Load(),
		HeartbeatsCoalesced: c.heartbeatsCoalesced.Load(),
		BytesSent:           c.bytesSent.Load(),
		BytesReceived:       c.bytesReceived.Load(),
		MessagesDropped:     c.messagesDropped.Load(),
		FramesDroppedOut:    c.framesDroppedOut.Load(),
		FramesDroppedIn:     c.framesDroppedIn.Load(),
		FramesRejectedSkew:  c.framesRejectedSkew.Load(),
	}
}
