// The plugin-candidate check (elf_check.h).
#include "elf_check.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if UINTPTR_MAX > 0xffffffffu
typedef Elf64_Ehdr tsr_elf_ehdr;
typedef Elf64_Phdr tsr_elf_phdr;
#define TSR_ELF_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr tsr_elf_ehdr;
typedef Elf32_Phdr tsr_elf_phdr;
#define TSR_ELF_CLASS ELFCLASS32
#endif

#if defined(__x86_64__)
#define TSR_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define TSR_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define TSR_ELF_MACHINE EM_386
#elif defined(__powerpc64__)
#define TSR_ELF_MACHINE EM_PPC64
#elif defined(__riscv)
#define TSR_ELF_MACHINE EM_RISCV
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TSR_ELF_DATA ELFDATA2LSB
#else
#define TSR_ELF_DATA ELFDATA2MSB
#endif

// Reads exactly |size| bytes at |offset|; 0 on success.
static int read_at(int fd, void *buf, size_t size, off_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, (char *)buf + done, size - done, offset + (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

static tsr_status refuse(int fd, tsr_status status, char *why, size_t why_size, const char *format,
                         ...) __attribute__((format(printf, 5, 6)));

static tsr_status refuse(int fd, tsr_status status, char *why, size_t why_size, const char *format,
                         ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(why, why_size, format, args);
  va_end(args);
  if (fd >= 0) close(fd);
  return status;
}

tsr_status tsr_elf_candidate_open(const char *path, int *out_fd, struct stat *out_stat, char *why,
                                  size_t why_size) {
  *out_fd = -1;
  // Non-blocking, so a FIFO or a device answers at once instead of hanging.
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return refuse(-1, errno == ENOENT ? TSR_NOT_FOUND : TSR_UNAVAILABLE, why, why_size,
                  "cannot open: %s", strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return refuse(fd, TSR_UNAVAILABLE, why, why_size, "cannot stat: %s", strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    const char *kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISDIR(st.st_mode)  ? "a folder"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size, "not a shared library: %s", kind);
  }
  const uint64_t size = (uint64_t)st.st_size;
  tsr_elf_ehdr eh;
  if (size < sizeof(eh) || read_at(fd, &eh, sizeof(eh), 0) != 0) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "not a shared library: %llu bytes, shorter than an ELF header",
                  (unsigned long long)size);
  }
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size, "not a shared library: no ELF magic");
  }
  if (eh.e_ident[EI_CLASS] != TSR_ELF_CLASS || eh.e_ident[EI_DATA] != TSR_ELF_DATA) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "an ELF file of another class or byte order (%d-bit %s) than this process",
                  eh.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32,
                  eh.e_ident[EI_DATA] == ELFDATA2LSB ? "little-endian" : "big-endian");
  }
  if (eh.e_type != ET_DYN) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "an ELF file that is not a shared object (e_type %u)", (unsigned)eh.e_type);
  }
#ifdef TSR_ELF_MACHINE
  if (eh.e_machine != TSR_ELF_MACHINE) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "a shared object for another machine (e_machine %u, this process %u)",
                  (unsigned)eh.e_machine, (unsigned)TSR_ELF_MACHINE);
  }
#endif
  if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(tsr_elf_phdr) ||
      (uint64_t)eh.e_phoff > size ||
      (uint64_t)eh.e_phnum * sizeof(tsr_elf_phdr) > size - (uint64_t)eh.e_phoff) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "a damaged shared object: its %u program headers at byte %llu do not fit in "
                  "its %llu bytes",
                  (unsigned)eh.e_phnum, (unsigned long long)eh.e_phoff, (unsigned long long)size);
  }
  int loads = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    tsr_elf_phdr ph;
    if (read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != 0) {
      return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                    "a damaged shared object: program header %u cannot be read", i);
    }
    if (ph.p_type != PT_LOAD) continue;
    ++loads;
    if ((uint64_t)ph.p_offset > size || (uint64_t)ph.p_filesz > size - (uint64_t)ph.p_offset) {
      return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                    "a truncated shared object: segment %u needs bytes %llu to %llu, the file "
                    "has %llu",
                    i, (unsigned long long)ph.p_offset,
                    (unsigned long long)ph.p_offset + (unsigned long long)ph.p_filesz,
                    (unsigned long long)size);
    }
  }
  if (loads == 0) {
    return refuse(fd, TSR_INVALID_ARGUMENT, why, why_size,
                  "a damaged shared object: no loadable segment");
  }
  *out_fd = fd;
  *out_stat = st;
  return TSR_OK;
}

int tsr_elf_mentions_origin(int fd, uint64_t size) {
  // Chunks overlap by the pattern's length less one, so a match across a
  // chunk boundary is seen.
  static const char pattern[] = "ORIGIN";
  const size_t n = sizeof(pattern) - 1;
  char buf[65536];
  uint64_t at = 0;
  while (at < size) {
    size_t want = size - at < sizeof(buf) ? (size_t)(size - at) : sizeof(buf);
    if (read_at(fd, buf, want, (off_t)at) != 0) return 1;  // unreadable: the cautious answer
    for (size_t i = 1; i + n <= want; ++i) {
      if (buf[i] == 'O' && memcmp(buf + i, pattern, n) == 0 &&
          (buf[i - 1] == '$' || (buf[i - 1] == '{' && i >= 2 && buf[i - 2] == '$'))) {
        return 1;
      }
    }
    if (at + want >= size) break;
    at += want - (n + 1);
  }
  return 0;
}
