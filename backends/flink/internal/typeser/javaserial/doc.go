// Package javaserial is the serializer family of flink-runtime's
// JavaSerializer: each value one Java Object Serialization stream (what a
// ListCheckpointed function's state holds), decoded into its objects'
// classes and fields.
package javaserial
