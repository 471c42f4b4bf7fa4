// Package wire reads and writes the big-endian values of Java's
// DataInputStream and DataOutputStream that every Flink file is made of
// (FLINK-FORMATS.md: "All numbers in Flink's binary files are big-endian"),
// Java's writeUTF strings in modified UTF-8, and names the errors of
// damaged and unknown-version files.
//
// Reader's first failure is sticky: later reads return zero values, so a
// decoder reads a whole structure and checks Err once. Nothing is
// allocated from a length before it is checked against the bytes that
// remain, and every error carries the file and offset (snapshot.CorruptError).
package wire
