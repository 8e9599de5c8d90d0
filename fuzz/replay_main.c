// Runs a fuzz target's LLVMFuzzerTestOneInput over every file of a folder
// (the seed corpus), so that the target builds and its seeds pass in every
// build, sanitized or not. Exit 0 when every input returned.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
  size_t got = data ? fread(data, 1, (size_t)size, f) : 0;
  fclose(f);
  if (data == NULL || got != (size_t)size) {
    free(data);
    fprintf(stderr, "replay: cannot read %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(data, got);
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  DIR *dir = opendir(argv[1]);
  if (dir == NULL) {
    fprintf(stderr, "replay: no corpus folder %s\n", argv[1]);
    return 1;
  }
  int failures = 0, count = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
    failures += run_file(path);
    ++count;
  }
  closedir(dir);
  printf("replay: %d inputs from %s\n", count, argv[1]);
  return failures == 0 && count > 0 ? 0 : 1;
}
