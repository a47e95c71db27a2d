/*
 * ProcessPrng, the one function of bcryptprimitives.dll that the Go
 * runtime (1.24 and later) needs on Windows, for Wine releases that lack
 * it (Debian 12's Wine 8.0): built by .ci/wine/run, for tests only.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom */

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
