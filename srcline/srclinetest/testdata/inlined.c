// A program whose functions inline into one another, for the tests of source lines: built with
// clang -g -O2 at test time and read against llvm-symbolizer.
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

static inline __attribute__((always_inline)) void innermost(int n)
{
	for (int i = 0; i < n; i++)
		sink += i * n;
}

static inline __attribute__((always_inline)) void middle(int n)
{
	innermost(n);
	sink ^= n;
	innermost(n + 1);
}

__attribute__((noinline)) void take(int n)
{
	sink += n;
	printf("%d\n", sink);
}

__attribute__((noinline)) void outer(int n)
{
	middle(n);
	take(n);
	middle(n * 2);
	take(n + 3);
}

int main(int argc, char **argv)
{
	outer(argc > 1 ? atoi(argv[1]) : 3);
	return 0;
}
