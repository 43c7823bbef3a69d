/* Two identical pauses (one listed is not enough for both). */
#include <unistd.h>
int main(void)
{
    usleep(1000);
    usleep(1000);
    return 0;
}
