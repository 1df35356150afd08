// The pickle opcodes, by their names in CPython's pickletools, in one table: the VM that reads
// them (machine.cpp) and the writer that emits them (writer.cpp) cannot disagree on a byte.
// The character in each comment is how the opcode shows in a protocol 0 stream.
#pragma once

#include <cstdint>

namespace ckpt::pickle::opcode {

// Protocol 0 and 1.
inline constexpr uint8_t MARK = 0x28;            // (
inline constexpr uint8_t STOP = 0x2E;            // .
inline constexpr uint8_t POP = 0x30;             // 0
inline constexpr uint8_t POP_MARK = 0x31;        // 1
inline constexpr uint8_t DUP = 0x32;             // 2
inline constexpr uint8_t FLOAT = 0x46;           // F
inline constexpr uint8_t BINFLOAT = 0x47;        // G
inline constexpr uint8_t INT = 0x49;             // I
inline constexpr uint8_t BININT = 0x4A;          // J
inline constexpr uint8_t BININT1 = 0x4B;         // K
inline constexpr uint8_t LONG = 0x4C;            // L
inline constexpr uint8_t BININT2 = 0x4D;         // M
inline constexpr uint8_t NONE = 0x4E;            // N
inline constexpr uint8_t PERSID = 0x50;          // P
inline constexpr uint8_t BINPERSID = 0x51;       // Q
inline constexpr uint8_t REDUCE = 0x52;          // R
inline constexpr uint8_t STRING = 0x53;          // S
inline constexpr uint8_t BINSTRING = 0x54;       // T
inline constexpr uint8_t SHORT_BINSTRING = 0x55; // U
inline constexpr uint8_t UNICODE = 0x56;         // V
inline constexpr uint8_t BINUNICODE = 0x58;      // X
inline constexpr uint8_t EMPTY_LIST = 0x5D;      // ]
inline constexpr uint8_t APPEND = 0x61;          // a
inline constexpr uint8_t BUILD = 0x62;           // b
inline constexpr uint8_t GLOBAL = 0x63;          // c
inline constexpr uint8_t DICT = 0x64;            // d
inline constexpr uint8_t APPENDS = 0x65;         // e
inline constexpr uint8_t GET = 0x67;             // g
inline constexpr uint8_t BINGET = 0x68;          // h
inline constexpr uint8_t INST = 0x69;            // i
inline constexpr uint8_t LONG_BINGET = 0x6A;     // j
inline constexpr uint8_t LIST = 0x6C;            // l
inline constexpr uint8_t OBJ = 0x6F;             // o
inline constexpr uint8_t PUT = 0x70;             // p
inline constexpr uint8_t BINPUT = 0x71;          // q
inline constexpr uint8_t LONG_BINPUT = 0x72;     // r
inline constexpr uint8_t SETITEM = 0x73;         // s
inline constexpr uint8_t TUPLE = 0x74;           // t
inline constexpr uint8_t SETITEMS = 0x75;        // u
inline constexpr uint8_t EMPTY_TUPLE = 0x29;     // )
inline constexpr uint8_t EMPTY_DICT = 0x7D;      // }

// Protocol 2.
inline constexpr uint8_t PROTO = 0x80;
inline constexpr uint8_t NEWOBJ = 0x81;
inline constexpr uint8_t EXT1 = 0x82;
inline constexpr uint8_t EXT2 = 0x83;
inline constexpr uint8_t EXT4 = 0x84;
inline constexpr uint8_t TUPLE1 = 0x85;
inline constexpr uint8_t TUPLE2 = 0x86;
inline constexpr uint8_t TUPLE3 = 0x87;
inline constexpr uint8_t NEWTRUE = 0x88;
inline constexpr uint8_t NEWFALSE = 0x89;
inline constexpr uint8_t LONG1 = 0x8A;
inline constexpr uint8_t LONG4 = 0x8B;

// Protocol 3.
inline constexpr uint8_t BINBYTES = 0x42;       // B
inline constexpr uint8_t SHORT_BINBYTES = 0x43; // C

// Protocol 4.
inline constexpr uint8_t SHORT_BINUNICODE = 0x8C;
inline constexpr uint8_t BINUNICODE8 = 0x8D;
inline constexpr uint8_t BINBYTES8 = 0x8E;
inline constexpr uint8_t EMPTY_SET = 0x8F;
inline constexpr uint8_t ADDITEMS = 0x90;
inline constexpr uint8_t FROZENSET = 0x91;
inline constexpr uint8_t NEWOBJ_EX = 0x92;
inline constexpr uint8_t STACK_GLOBAL = 0x93;
inline constexpr uint8_t MEMOIZE = 0x94;
inline constexpr uint8_t FRAME = 0x95;

// Protocol 5.
inline constexpr uint8_t BYTEARRAY8 = 0x96;
inline constexpr uint8_t NEXT_BUFFER = 0x97;
inline constexpr uint8_t READONLY_BUFFER = 0x98;

} // namespace ckpt::pickle::opcode
