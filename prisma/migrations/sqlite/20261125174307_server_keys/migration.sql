-- CreateTable
CREATE TABLE "ServerKey" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL
);
