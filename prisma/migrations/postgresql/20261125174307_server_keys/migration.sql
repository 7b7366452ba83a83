-- CreateTable
CREATE TABLE "ServerKey" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "ServerKey_pkey" PRIMARY KEY ("name")
);
