#include "textflag.h"

DATA hexdigits<>+0(SB)/8, $"01234567"
DATA hexdigits<>+8(SB)/8, $"89abcdef"
GLOBL hexdigits<>(SB), RODATA|NOPTR, $16

DATA lownibbles<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lownibbles<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL lownibbles<>(SB), RODATA|NOPTR, $16

// func hexSSSE3(dst, src *byte, n int)
TEXT ·hexSSSE3(SB), NOSPLIT, $0-24
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  n+16(FP), CX
	MOVOU hexdigits<>(SB), X6
	MOVOU lownibbles<>(SB), X7

loop:
	MOVOU (SI), X0
	MOVO  X0, X1
	PSRLW $4, X1
	PAND  X7, X0      // low nibbles
	PAND  X7, X1      // high nibbles
	MOVO  X6, X2
	PSHUFB X0, X2     // their digits
	MOVO  X6, X3
	PSHUFB X1, X3
	MOVO  X3, X4
	PUNPCKLBW X2, X4  // high digit, then low, for bytes 0-7
	PUNPCKHBW X2, X3  // and for bytes 8-15
	MOVOU X4, (DI)
	MOVOU X3, 16(DI)
	ADDQ  $16, SI
	ADDQ  $32, DI
	SUBQ  $16, CX
	JNZ   loop
	RET
