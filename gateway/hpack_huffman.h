/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * RFC 7541 Appendix B's Huffman code as tables (gateway/hpack_huffman.c,
 * written by tools/hpack/huffman-gen.py from the RFC's rows): each
 * symbol's code and length (symbol 256 is EOS), and for decoding, the
 * codes of up to 8 bits by the byte they start, then the canonical code's
 * first code, count and symbols by length (5 to 30 bits).
 */
#ifndef COLOC_GATEWAY_HPACK_HUFFMAN_H
#define COLOC_GATEWAY_HPACK_HUFFMAN_H

#include <stdint.h>

#define HPACK_HUFFMAN_EOS 256
#define HPACK_HUFFMAN_MAX_LEN 30

extern const uint32_t hpack_huffman_code[257];
extern const uint8_t hpack_huffman_len[257];
extern const uint16_t hpack_huffman_lut8[256]; /* symbol | length << 9, or 0 */
extern const uint32_t hpack_huffman_first[31], hpack_huffman_count[31], hpack_huffman_offset[31];
extern const uint16_t hpack_huffman_sorted[257];

#endif /* COLOC_GATEWAY_HPACK_HUFFMAN_H */
