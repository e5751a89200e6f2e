/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* coloc's release version, printed by every binary's --version. */
#ifndef COLOC_COMMON_VERSION_H
#define COLOC_COMMON_VERSION_H

#define COLOC_VERSION "0.4.0"

#endif /* COLOC_COMMON_VERSION_H */
