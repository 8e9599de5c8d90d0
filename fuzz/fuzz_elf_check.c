// Fuzz target for the plugin-candidate check (core/elf_check.c): the input
// is a file in a plugin folder. It is written to an anonymous in-memory file
// and checked through its /proc/self/fd path, as discovery checks a
// candidate before dlopen; whatever the bytes, the check must return a
// status without reading outside the file, and accept only a descriptor it
// leaves open. Nothing is dlopen'ed: the check is what stands in front of
// dlopen.
//
// The checker is compiled into this target, so the fuzzer's coverage and
// sanitizers see it.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // memfd_create
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf_check.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int mem = memfd_create("tsr-fuzz-candidate", MFD_CLOEXEC);
  if (mem < 0) {
    perror("fuzz_elf_check: memfd_create");
    abort();
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(mem, data + done, size - done);
    if (n <= 0) abort();
    done += (size_t)n;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", mem);
  int fd = -1;
  struct stat st;
  char why[512];
  tsr_status status = tsr_elf_candidate_open(path, &fd, &st, why, sizeof(why));
  if (status == TSR_OK) {
    if (fd < 0 || (uint64_t)st.st_size != size) abort();
    (void)tsr_elf_mentions_origin(fd, (uint64_t)st.st_size);
    close(fd);
  } else if (fd != -1 || why[0] == '\0') {
    abort();  // a refusal leaves no descriptor and always says why
  }
  close(mem);
  return 0;
}
