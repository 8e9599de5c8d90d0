// Checks a plugin candidate before dlopen sees it. dlopen maps a file's
// segments as its program headers say and touches them: a library cut short
// (a truncated copy, a full disk) dies with SIGBUS inside dlopen, and a FIFO
// named libtessera-x.so blocks it forever. The check reads the file through
// one descriptor opened without blocking: a regular file, an ELF shared
// object (ET_DYN) of this process's class, byte order and machine, whose
// program headers and every PT_LOAD segment lie within the file.
#ifndef TESSERA_CORE_ELF_CHECK_H_
#define TESSERA_CORE_ELF_CHECK_H_

#include <stddef.h>
#include <sys/stat.h>

#include "tessera/abi.h"

// Opens |path| (O_RDONLY | O_NONBLOCK | O_CLOEXEC) and checks it. TSR_OK with
// the open descriptor in |*out_fd| (the caller closes it) and its stat in
// |*out_stat|; otherwise the status, with the reason written to |why|
// (|why_size| bytes) and no descriptor left open. Thread-safe.
tsr_status tsr_elf_candidate_open(const char *path, int *out_fd, struct stat *out_stat, char *why,
                                  size_t why_size);

// 1 when the checked file |fd| of |size| bytes contains "$ORIGIN" (or
// "${ORIGIN}"): a RUNPATH or RPATH relative to the library's own folder,
// which loading it through /proc/self/fd/N would break. A byte scan, so a
// stray string counts too: the caller then loads by path instead, which is
// only the safer-looking choice, never a wrong one. Thread-safe.
int tsr_elf_mentions_origin(int fd, uint64_t size);

#endif  // TESSERA_CORE_ELF_CHECK_H_
